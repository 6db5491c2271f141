//! Built-in demo tools and script, for `chainbox demo` and for tests.
//!
//! The tools are deterministic, in-memory Rust tools (no network, no
//! clock): weather from a small table, currency conversion at fixed rates,
//! a customer's orders, and a bar chart drawn as SVG. The script
//! ([`DEMO_SCRIPT`]) is the kind of chain a model writes: concurrent calls
//! with `asyncio.gather`, data from one tool feeding the next, and a dict
//! summary as its final expression.

use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::tools::{
    ContentBlock, Tool, ToolContext, ToolError, ToolExecutionResult, ToolInfo, ToolOutput, ToolRegistry,
};

/// The demo chain: weather for three cities at once, a price conversion,
/// a customer's shipped orders with their details, and a chart.
pub const DEMO_SCRIPT: &str = r#"import asyncio

cities = ["Paris", "Tokyo", "New York"]
reports = await asyncio.gather(*[get_weather(city=c) for c in cities])
warmest = max(reports, key=lambda r: r["temp_c"])
print(f"warmest: {warmest['city']} at {warmest['temp_c']} C, {warmest['conditions']}")

price = await convert_currency(amount=129.0, from_currency="USD", to_currency="EUR")
orders = await list_orders(customer_id="C-1001", status="shipped")
details = await asyncio.gather(*[get_order(order_id=o["order_id"]) for o in orders])
items = sum(len(d["items"]) for d in details)
total = sum(d["total"] for d in details)
print(f"{len(orders)} shipped orders, {items} items, {total:.2f} USD")

chart = await render_chart(title="Temperature (C)", values=[r["temp_c"] for r in reports])

{
    "warmest_city": warmest["city"],
    "temperatures": {r["city"]: r["temp_c"] for r in reports},
    "keyboard_price_eur": price["converted"],
    "shipped_orders": [o["order_id"] for o in orders],
    "shipped_total_usd": round(total, 2),
}
"#;

/// A registry of the demo tools: `get_weather`, `convert_currency`,
/// `list_orders`, `get_order` and `render_chart`, all safe.
pub fn demo_registry() -> ToolRegistry {
    let tools = [
        Demo::Weather,
        Demo::Currency,
        Demo::ListOrders,
        Demo::GetOrder,
        Demo::Chart,
    ]
    .into_iter()
    .map(|kind| Arc::new(DemoTool::new(kind)) as Arc<dyn Tool>);
    // The names are fixed identifiers and distinct, so this cannot fail;
    // an empty registry would still be a usable (if dull) answer.
    ToolRegistry::from_local(tools).unwrap_or_default()
}

#[derive(Debug, Clone, Copy)]
enum Demo {
    Weather,
    Currency,
    ListOrders,
    GetOrder,
    Chart,
}

/// One demo tool: its declaration plus which behaviour runs.
struct DemoTool {
    kind: Demo,
    info: ToolInfo,
}

impl DemoTool {
    fn new(kind: Demo) -> Self {
        let (name, description, schema) = match kind {
            Demo::Weather => (
                "get_weather",
                "Current weather for a city: {city, temp_c, conditions}.",
                json!({
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "description": "City name, e.g. \"Paris\""}
                    },
                    "required": ["city"],
                    "additionalProperties": false
                }),
            ),
            Demo::Currency => (
                "convert_currency",
                "Converts an amount between currencies (USD, EUR, GBP, JPY, CHF, CAD) at fixed rates: \
                 {amount, from_currency, to_currency, rate, converted}.",
                json!({
                    "type": "object",
                    "properties": {
                        "amount": {"type": "number", "description": "The amount to convert"},
                        "from_currency": {"type": "string", "description": "ISO code of the amount's currency, e.g. \"USD\""},
                        "to_currency": {"type": "string", "description": "ISO code to convert to, e.g. \"EUR\""}
                    },
                    "required": ["amount", "from_currency", "to_currency"],
                    "additionalProperties": false
                }),
            ),
            Demo::ListOrders => (
                "list_orders",
                "A customer's orders, newest first: [{order_id, status, total, currency, placed_on}].",
                json!({
                    "type": "object",
                    "properties": {
                        "customer_id": {"type": "string", "description": "Customer id, e.g. \"C-1001\""},
                        "status": {
                            "type": "string",
                            "enum": ["pending", "shipped", "delivered", "cancelled"],
                            "description": "Only orders with this status"
                        }
                    },
                    "required": ["customer_id"],
                    "additionalProperties": false
                }),
            ),
            Demo::GetOrder => (
                "get_order",
                "One order with its items: {order_id, customer_id, status, placed_on, currency, total, \
                 items: [{name, quantity, unit_price}]}.",
                json!({
                    "type": "object",
                    "properties": {
                        "order_id": {"type": "string", "description": "Order id, e.g. \"O-5001\""}
                    },
                    "required": ["order_id"],
                    "additionalProperties": false
                }),
            ),
            Demo::Chart => (
                "render_chart",
                "Renders a bar chart as an SVG image (returned as a file) with a one-line text summary.",
                json!({
                    "type": "object",
                    "properties": {
                        "title": {"type": "string", "description": "Chart title"},
                        "values": {
                            "type": "array",
                            "items": {"type": "number"},
                            "minItems": 1,
                            "maxItems": MAX_BARS,
                            "description": "Bar heights, left to right"
                        }
                    },
                    "required": ["title", "values"],
                    "additionalProperties": false
                }),
            ),
        };
        DemoTool {
            kind,
            info: ToolInfo::new(name, description, schema),
        }
    }
}

#[async_trait]
impl Tool for DemoTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn source(&self) -> String {
        format!("demo:{}", self.info.name)
    }

    async fn execute(&self, _ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        match self.kind {
            Demo::Weather => get_weather(&args),
            Demo::Currency => convert_currency(&args),
            Demo::ListOrders => list_orders(&args),
            Demo::GetOrder => get_order(&args),
            Demo::Chart => render_chart(&args),
        }
    }
}

fn str_arg<'a>(args: &'a Map<String, Value>, name: &str) -> Result<&'a str, ToolError> {
    match args.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(ToolError::new(format!("`{name}` must be a string"))),
        None => Err(ToolError::new(format!("missing argument `{name}`"))),
    }
}

fn optional_str_arg<'a>(args: &'a Map<String, Value>, name: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => str_arg(args, name).map(Some),
    }
}

fn number_arg(args: &Map<String, Value>, name: &str) -> Result<f64, ToolError> {
    match args.get(name) {
        Some(value) => value
            .as_f64()
            .ok_or_else(|| ToolError::new(format!("`{name}` must be a number"))),
        None => Err(ToolError::new(format!("missing argument `{name}`"))),
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// City, temperature (°C), conditions.
const WEATHER: &[(&str, i64, &str)] = &[
    ("Paris", 18, "partly cloudy"),
    ("London", 14, "light rain"),
    ("Berlin", 16, "overcast"),
    ("Tokyo", 23, "clear"),
    ("New York", 21, "sunny"),
    ("Sydney", 26, "sunny"),
    ("Oslo", 9, "showers"),
];

fn get_weather(args: &Map<String, Value>) -> Result<ToolOutput, ToolError> {
    let city = str_arg(args, "city")?;
    let wanted = city.trim();
    let Some((name, temp_c, conditions)) = WEATHER.iter().find(|(name, ..)| name.eq_ignore_ascii_case(wanted)) else {
        let known: Vec<&str> = WEATHER.iter().map(|(name, ..)| *name).collect();
        return Err(ToolError::new(format!(
            "unknown city {city:?}; known cities: {}",
            known.join(", ")
        )));
    };
    Ok(json!({"city": name, "temp_c": temp_c, "conditions": conditions}).into())
}

/// Units of each currency per US dollar.
const RATES_PER_USD: &[(&str, f64)] = &[
    ("USD", 1.0),
    ("EUR", 0.92),
    ("GBP", 0.79),
    ("JPY", 151.2),
    ("CHF", 0.88),
    ("CAD", 1.36),
];

fn rate_of(code: &str) -> Result<f64, ToolError> {
    RATES_PER_USD
        .iter()
        .find(|(c, _)| c.eq_ignore_ascii_case(code.trim()))
        .map(|(_, rate)| *rate)
        .ok_or_else(|| {
            let known: Vec<&str> = RATES_PER_USD.iter().map(|(c, _)| *c).collect();
            ToolError::new(format!("unknown currency {code:?}; known: {}", known.join(", ")))
        })
}

fn convert_currency(args: &Map<String, Value>) -> Result<ToolOutput, ToolError> {
    let amount = number_arg(args, "amount")?;
    let from = str_arg(args, "from_currency")?;
    let to = str_arg(args, "to_currency")?;
    let rate = rate_of(to)? / rate_of(from)?;
    let rate = (rate * 1e6).round() / 1e6;
    Ok(json!({
        "amount": amount,
        "from_currency": from.trim().to_ascii_uppercase(),
        "to_currency": to.trim().to_ascii_uppercase(),
        "rate": rate,
        "converted": round2(amount * rate),
    })
    .into())
}

struct Order {
    id: &'static str,
    customer: &'static str,
    status: &'static str,
    placed_on: &'static str,
    /// Name, quantity, unit price in cents.
    items: &'static [(&'static str, u32, u64)],
}

impl Order {
    fn total_cents(&self) -> u64 {
        self.items.iter().map(|(_, qty, cents)| u64::from(*qty) * cents).sum()
    }

    fn summary(&self) -> Value {
        json!({
            "order_id": self.id,
            "status": self.status,
            "total": dollars(self.total_cents()),
            "currency": "USD",
            "placed_on": self.placed_on,
        })
    }

    fn details(&self) -> Value {
        let items: Vec<Value> = self
            .items
            .iter()
            .map(|(name, quantity, cents)| json!({"name": name, "quantity": quantity, "unit_price": dollars(*cents)}))
            .collect();
        json!({
            "order_id": self.id,
            "customer_id": self.customer,
            "status": self.status,
            "placed_on": self.placed_on,
            "currency": "USD",
            "total": dollars(self.total_cents()),
            "items": items,
        })
    }
}

/// Cents as a dollar amount (exact to the cent as a JSON number).
fn dollars(cents: u64) -> f64 {
    // Demo totals are far below 2^53, where every cent count is exact.
    cents as f64 / 100.0
}

/// Newest first.
const ORDERS: &[Order] = &[
    Order {
        id: "O-5007",
        customer: "C-1001",
        status: "pending",
        placed_on: "2025-03-18",
        items: &[("Desk lamp", 1, 3_450)],
    },
    Order {
        id: "O-5006",
        customer: "C-1002",
        status: "cancelled",
        placed_on: "2025-03-15",
        items: &[("Webcam", 1, 6_400)],
    },
    Order {
        id: "O-5005",
        customer: "C-1001",
        status: "shipped",
        placed_on: "2025-03-11",
        items: &[("27-inch monitor", 1, 28_999), ("Monitor arm", 1, 4_500)],
    },
    Order {
        id: "O-5004",
        customer: "C-1002",
        status: "pending",
        placed_on: "2025-03-09",
        items: &[("Laptop stand", 1, 3_990)],
    },
    Order {
        id: "O-5003",
        customer: "C-1001",
        status: "delivered",
        placed_on: "2025-03-04",
        items: &[("USB-C cable", 3, 950)],
    },
    Order {
        id: "O-5001",
        customer: "C-1001",
        status: "shipped",
        placed_on: "2025-03-02",
        items: &[("Mechanical keyboard", 1, 12_900)],
    },
];

fn list_orders(args: &Map<String, Value>) -> Result<ToolOutput, ToolError> {
    let customer = str_arg(args, "customer_id")?;
    let status = optional_str_arg(args, "status")?;
    if !ORDERS.iter().any(|o| o.customer == customer) {
        return Err(ToolError::new(format!("unknown customer {customer:?}")));
    }
    let orders: Vec<Value> = ORDERS
        .iter()
        .filter(|o| o.customer == customer && status.is_none_or(|s| o.status == s))
        .map(Order::summary)
        .collect();
    Ok(Value::Array(orders).into())
}

fn get_order(args: &Map<String, Value>) -> Result<ToolOutput, ToolError> {
    let id = str_arg(args, "order_id")?;
    ORDERS
        .iter()
        .find(|o| o.id == id)
        .map(|o| o.details().into())
        .ok_or_else(|| ToolError::new(format!("unknown order {id:?}")))
}

/// Most bars a chart draws: beyond this they would be under 4 pixels wide.
const MAX_BARS: usize = 64;
/// Chart size in pixels: large enough to read.
const CHART_WIDTH: usize = 320;
const CHART_HEIGHT: usize = 200;

fn render_chart(args: &Map<String, Value>) -> Result<ToolOutput, ToolError> {
    let title = str_arg(args, "title")?;
    let values: Vec<f64> = match args.get("values") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_f64().ok_or_else(|| ToolError::new("`values` must be numbers")))
            .collect::<Result<_, _>>()?,
        _ => return Err(ToolError::new("`values` must be a list of numbers")),
    };
    if values.is_empty() || values.len() > MAX_BARS {
        return Err(ToolError::new(format!("`values` must hold 1 to {MAX_BARS} numbers")));
    }
    let svg = bar_chart(&values, CHART_WIDTH, CHART_HEIGHT);
    let (min, max) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(*v), hi.max(*v))
    });
    let summary = format!(
        "bar chart {title:?}: {} bars from {min} to {max} ({CHART_WIDTH}x{CHART_HEIGHT} SVG)",
        values.len()
    );
    let mut structured = Map::new();
    structured.insert("title".into(), json!(title));
    structured.insert("bars".into(), json!(values.len()));
    structured.insert("width".into(), json!(CHART_WIDTH));
    structured.insert("height".into(), json!(CHART_HEIGHT));
    Ok(ToolOutput::Result(ToolExecutionResult {
        content: vec![
            ContentBlock::Text { text: summary },
            ContentBlock::Image {
                media_type: "image/svg+xml".into(),
                data: base64::engine::general_purpose::STANDARD.encode(svg),
            },
        ],
        structured_content: structured,
        ..ToolExecutionResult::default()
    }))
}

/// An SVG bar chart: bars from a zero baseline (up for positive values,
/// down for negative) on a white background, in whole pixels.
fn bar_chart(values: &[f64], width: usize, height: usize) -> String {
    const MARGIN: usize = 12;
    const BAR: &str = "#4285f4";
    const NEGATIVE: &str = "#db4437";
    const AXIS: &str = "#787878";

    let plot_w = width.saturating_sub(2 * MARGIN).max(1);
    let plot_h = height.saturating_sub(2 * MARGIN).max(1);
    let lo = values.iter().copied().fold(0.0_f64, f64::min);
    let mut hi = values.iter().copied().fold(0.0_f64, f64::max);
    if hi - lo <= f64::EPSILON {
        hi = lo + 1.0;
    }
    // Pixel row of a value: `hi` at the top of the plot, `lo` at the bottom.
    let row = |v: f64| -> usize {
        let fraction = ((hi - v) / (hi - lo)).clamp(0.0, 1.0);
        MARGIN + (fraction * plot_h as f64).round() as usize
    };
    let baseline = row(0.0);
    let slot = plot_w / values.len();
    let bar_w = (slot * 7 / 10).max(1);
    let rect = |x: usize, y: usize, w: usize, h: usize, fill: &str| {
        format!(r#"<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{fill}"/>"#)
    };
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">"#
    );
    svg += &rect(0, 0, width, height, "#ffffff");
    for (i, v) in values.iter().enumerate() {
        let x = MARGIN + i * slot + (slot - bar_w) / 2;
        let y = row(*v);
        let fill = if *v >= 0.0 { BAR } else { NEGATIVE };
        svg += &rect(x, y.min(baseline), bar_w, y.abs_diff(baseline), fill);
    }
    svg += &rect(MARGIN, baseline, plot_w, 1, AXIS);
    svg += "</svg>\n";
    svg
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    fn ctx() -> ToolContext {
        ToolContext {
            run_id: "test".into(),
            call_id: 1,
            deadline: Instant::now() + Duration::from_secs(5),
        }
    }

    async fn call(name: &str, args: Value) -> Result<ToolOutput, ToolError> {
        let registry = demo_registry();
        let Some(tool) = registry.get(name).and_then(|t| t.as_local()) else {
            panic!("no demo tool {name}");
        };
        tool.execute(ctx(), args.as_object().cloned().unwrap_or_default()).await
    }

    async fn value(name: &str, args: Value) -> Value {
        match call(name, args).await {
            Ok(ToolOutput::Value(v)) => v,
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn registry_holds_the_five_demo_tools() {
        let names: Vec<String> = demo_registry().iter().map(|t| t.name().to_owned()).collect();
        assert_eq!(
            names,
            [
                "get_weather",
                "convert_currency",
                "list_orders",
                "get_order",
                "render_chart"
            ]
        );
    }

    #[tokio::test]
    async fn weather_comes_from_the_table() {
        let w = value("get_weather", json!({"city": "paris"})).await;
        assert_eq!(w, json!({"city": "Paris", "temp_c": 18, "conditions": "partly cloudy"}));
    }

    #[tokio::test]
    async fn unknown_city_is_a_tool_error() {
        let err = call("get_weather", json!({"city": "Atlantis"})).await.unwrap_err();
        assert!(err.message.starts_with("unknown city \"Atlantis\""), "{}", err.message);
    }

    #[tokio::test]
    async fn currency_converts_at_fixed_rates() {
        let c = value(
            "convert_currency",
            json!({"amount": 100, "from_currency": "USD", "to_currency": "EUR"}),
        )
        .await;
        assert_eq!(c["converted"], json!(92.0));
        assert_eq!(c["rate"], json!(0.92));
    }

    #[tokio::test]
    async fn unknown_currency_is_a_tool_error() {
        let err = call(
            "convert_currency",
            json!({"amount": 1, "from_currency": "USD", "to_currency": "XYZ"}),
        )
        .await
        .unwrap_err();
        assert!(err.message.starts_with("unknown currency \"XYZ\""), "{}", err.message);
    }

    #[tokio::test]
    async fn orders_filter_by_status() {
        let orders = value("list_orders", json!({"customer_id": "C-1001", "status": "shipped"})).await;
        let ids: Vec<&str> = orders
            .as_array()
            .map(|o| o.iter().filter_map(|o| o["order_id"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(ids, ["O-5005", "O-5001"]);
    }

    #[tokio::test]
    async fn order_total_is_exact_to_the_cent() {
        let order = value("get_order", json!({"order_id": "O-5005"})).await;
        assert_eq!(order["total"], json!(334.99));
        assert_eq!(order["items"].as_array().map(Vec::len), Some(2));
    }

    #[tokio::test]
    async fn unknown_order_is_a_tool_error() {
        let err = call("get_order", json!({"order_id": "O-1"})).await.unwrap_err();
        assert_eq!(err.message, "unknown order \"O-1\"");
    }

    async fn chart_svg() -> String {
        let out = call("render_chart", json!({"title": "t", "values": [3, -1.5, 7]})).await;
        let Ok(ToolOutput::Result(result)) = out else {
            panic!("render_chart: {out:?}")
        };
        assert!(
            result.text().starts_with("bar chart \"t\": 3 bars"),
            "{}",
            result.text()
        );
        let data = result.content.iter().find_map(|b| match b {
            ContentBlock::Image { media_type, data } if media_type == "image/svg+xml" => Some(data.clone()),
            _ => None,
        });
        let data = data.expect("an image/svg+xml block");
        let bytes = base64::engine::general_purpose::STANDARD.decode(data).expect("base64");
        String::from_utf8(bytes).expect("UTF-8")
    }

    #[tokio::test]
    async fn chart_svg_is_well_formed_xml_with_a_bar_per_value() {
        // Python's XML parser checks the markup; the chart has the chart
        // size, a background, three bars and an axis in four colours.
        let svg = chart_svg().await;
        let script = "import sys, xml.etree.ElementTree as ET\n\
            root = ET.fromstring(sys.stdin.read())\n\
            assert root.tag == '{http://www.w3.org/2000/svg}svg', root.tag\n\
            rects = list(root)\n\
            assert all(r.tag.endswith('rect') for r in rects)\n\
            print(root.get('width'), root.get('height'), len(rects), len({r.get('fill') for r in rects}))\n";
        let mut child = std::process::Command::new("python3")
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), svg.as_bytes()).expect("write svg");
        let output = child.wait_with_output().expect("python3 ends");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "320 200 5 4");
    }

    #[test]
    fn chart_bars_stand_on_the_zero_baseline() {
        // 10 up, 10 down: the baseline is mid-plot (row 100), each bar 88 px.
        let svg = bar_chart(&[10.0, -10.0], 320, 200);
        for rect in [
            r##"<rect x="34" y="12" width="103" height="88" fill="#4285f4"/>"##,
            r##"<rect x="182" y="100" width="103" height="88" fill="#db4437"/>"##,
            r##"<rect x="12" y="100" width="296" height="1" fill="#787878"/>"##,
        ] {
            assert!(svg.contains(rect), "{rect} not in {svg}");
        }
    }

    #[tokio::test]
    async fn chart_rejects_empty_values() {
        let err = call("render_chart", json!({"title": "t", "values": []}))
            .await
            .unwrap_err();
        assert!(err.message.contains("1 to 64"), "{}", err.message);
    }

    /// Runs [`DEMO_SCRIPT`] in native monty (the interpreter the sandbox
    /// embeds), answering its calls with the demo tools: the script must
    /// parse in the subset, use only demo tools with their real argument
    /// names, and end with the expected summary.
    #[tokio::test]
    async fn demo_script_runs_against_the_demo_tools() {
        use monty::{MontyRun, RunProgress};
        use monty_types::{CompileOptions, ExtFunctionResult, MontyObject, PrintWriter, ResourceTracker};

        let registry = demo_registry();
        let names: Vec<String> = registry.iter().map(|t| t.name().to_owned()).collect();
        let runner = MontyRun::new(
            DEMO_SCRIPT.to_owned(),
            "demo.py",
            names.clone(),
            CompileOptions::default(),
        )
        .expect("the demo script compiles");
        let inputs = names.iter().map(|n| MontyObject::function(n.clone(), None)).collect();
        let mut printed = String::new();
        let mut progress = runner
            .start(
                inputs,
                ResourceTracker::default(),
                PrintWriter::CollectString(&mut printed, None),
            )
            .expect("starts");
        let mut answered: Vec<(u32, ExtFunctionResult)> = Vec::new();
        let mut calls: Vec<String> = Vec::new();
        let output = loop {
            progress = match progress {
                RunProgress::FunctionCall(fc) => {
                    assert_eq!(
                        fc.args.args().len(),
                        0,
                        "{} called with positional args",
                        fc.function_name
                    );
                    let mut args = Map::new();
                    for (key, value) in fc.args.kwargs() {
                        args.insert(key.as_str().expect("keyword name").to_owned(), monty_to_json(value));
                    }
                    let result = match call(&fc.function_name, Value::Object(args)).await {
                        Ok(ToolOutput::Value(v)) => json_to_monty(&v),
                        Ok(ToolOutput::Result(r)) => json_to_monty(&json!({"text": r.text()})),
                        Err(e) => panic!("{} failed: {}", fc.function_name, e.message),
                    };
                    calls.push(fc.function_name.clone());
                    answered.push((fc.call_id, ExtFunctionResult::Return(result)));
                    fc.resume_pending(PrintWriter::CollectString(&mut printed, None))
                        .expect("resumes")
                }
                RunProgress::ResolveFutures(pending) => {
                    let ids = pending.pending_call_ids().to_vec();
                    let (ready, rest): (Vec<_>, Vec<_>) = answered.into_iter().partition(|(id, _)| ids.contains(id));
                    answered = rest;
                    pending
                        .resume(ready, PrintWriter::CollectString(&mut printed, None))
                        .expect("resumes")
                }
                RunProgress::NameLookup(lookup) => panic!("undefined name {}", lookup.name),
                RunProgress::OsCall(os) => panic!("unexpected OS call {:?}", os.function_call),
                RunProgress::Complete(value) => break monty_to_json(value.as_ref()),
            };
        };

        assert_eq!(
            calls,
            [
                "get_weather",
                "get_weather",
                "get_weather",
                "convert_currency",
                "list_orders",
                "get_order",
                "get_order",
                "render_chart"
            ]
        );
        assert_eq!(
            printed,
            "warmest: Tokyo at 23 C, clear\n2 shipped orders, 3 items, 463.99 USD\n"
        );
        assert_eq!(
            output,
            json!({
                "warmest_city": "Tokyo",
                "temperatures": {"Paris": 18, "Tokyo": 23, "New York": 21},
                "keyboard_price_eur": 118.68,
                "shipped_orders": ["O-5005", "O-5001"],
                "shipped_total_usd": 463.99,
            })
        );
    }

    fn monty_to_json(value: monty_types::ObjectRef<'_>) -> Value {
        match value.type_name() {
            "NoneType" => Value::Null,
            "bool" => json!(value.as_bool()),
            "int" => json!(value.as_int()),
            "float" => json!(value.as_float()),
            "str" => json!(value.as_str()),
            "list" | "tuple" => Value::Array(
                value
                    .items()
                    .unwrap_or_default()
                    .into_iter()
                    .map(monty_to_json)
                    .collect(),
            ),
            "dict" => Value::Object(
                value
                    .pairs()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k.as_str().unwrap_or_default().to_owned(), monty_to_json(v)))
                    .collect(),
            ),
            other => panic!("unexpected {other} in the demo"),
        }
    }

    fn json_to_monty(value: &Value) -> monty_types::MontyObject {
        use monty_types::MontyObject;
        match value {
            Value::Null => MontyObject::none(),
            Value::Bool(b) => MontyObject::bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => MontyObject::int(i),
                None => MontyObject::float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => MontyObject::string(s.clone()),
            Value::Array(items) => MontyObject::list(items.iter().map(json_to_monty)),
            Value::Object(map) => MontyObject::dict(
                map.iter()
                    .map(|(k, v)| (MontyObject::string(k.clone()), json_to_monty(v))),
            ),
        }
    }
}
