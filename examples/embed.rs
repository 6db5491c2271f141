//! Embedding chainbox: build an engine once, register a Rust tool, run a
//! chain, and read the result and its trace.
//!
//! Run with `cargo run --release --example embed`.

use std::sync::Arc;

use async_trait::async_trait;
use chainbox::{
    Approval, ChainPolicy, Engine, Tool, ToolContext, ToolError, ToolInfo, ToolOutput, ToolRegistry, ToolRisk,
};
use serde_json::{Map, Value, json};

/// A tool: the length of a word.
struct WordLength {
    info: ToolInfo,
}

#[async_trait]
impl Tool for WordLength {
    fn info(&self) -> &ToolInfo {
        &self.info
    }
    async fn execute(&self, _ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        let word = args
            .get("word")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new("word must be a string"))?;
        Ok(json!(word.chars().count()).into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let engine = Engine::new()?;
    let tool = WordLength {
        info: ToolInfo::new(
            "word_length",
            "Returns the number of characters in `word`.",
            json!({
                "type": "object",
                "properties": {"word": {"type": "string"}},
                "required": ["word"],
                "additionalProperties": false
            }),
        ),
    };
    let registry = ToolRegistry::from_local([Arc::new(tool) as Arc<dyn Tool>])?;
    let script = r#"
import asyncio
words = ["sandbox", "chain", "wasm"]
lengths = await asyncio.gather(*[word_length(word=w) for w in words])
print("lengths:", lengths)
dict(zip(words, lengths))
"#;
    let result = engine
        .run(
            script,
            &registry,
            &ChainPolicy::default(),
            &Approval::auto(ToolRisk::Safe),
        )
        .await;
    println!("{}", serde_json::to_string_pretty(&result)?);
    Ok(())
}
