//! Python values ↔ JSON, the only shape tool arguments and results take on
//! the boundary. Follows `json.dumps`: tuples and sets become arrays, int and
//! float dict keys become strings, dataclass instances become objects of their
//! fields; anything else is "not JSON serializable".

use chainbox_protocol::MAX_VALUE_DEPTH;
use monty_types::{MontyObject, ObjectRef};
use num_bigint::BigInt;
use serde_json::{Map, Number, Value};

/// Converts a Python value to JSON, or says why it cannot be.
pub fn to_json(value: ObjectRef<'_>) -> Result<Value, String> {
    convert(value, 0)
}

fn convert(value: ObjectRef<'_>, depth: usize) -> Result<Value, String> {
    if depth > MAX_VALUE_DEPTH {
        return Err(format!("value nested deeper than {MAX_VALUE_DEPTH} levels"));
    }
    let type_name = value.type_name();
    Ok(match type_name {
        "NoneType" => Value::Null,
        "bool" => Value::Bool(value.as_bool().unwrap_or(false)),
        "int" => match value.as_int() {
            Some(i) => Value::Number(i.into()),
            // Beyond 64 bits: every digit, as Python's `json.dumps` writes it
            // (serde_json's `arbitrary_precision` keeps the text).
            None => Value::Number(big_int(&value.py_repr())?),
        },
        "float" => {
            // Spelled as `json.dumps` (float's repr) spells it, `1e-06` and
            // `1e+20`, as the CPython guest's answers are: serde_json's
            // `arbitrary_precision` keeps the text. `nan` and `inf` are
            // named as Python writes them, as the CPython guest does.
            let repr = value.py_repr();
            let finite = value.as_float().is_some_and(f64::is_finite);
            Value::Number(
                finite
                    .then(|| repr.parse::<Number>().ok())
                    .flatten()
                    .ok_or_else(|| format!("float {repr} is not JSON compliant"))?,
            )
        }
        "str" => Value::String(value.as_str().unwrap_or_default().to_owned()),
        "list" | "tuple" | "set" | "frozenset" | "namedtuple" => Value::Array(
            value
                .items()
                .unwrap_or_default()
                .into_iter()
                .map(|item| convert(item, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        "module" | "type" => return Err(not_serializable(type_name)),
        // An instance is an object of its fields only for a dataclass.
        _ if value.instance_of_dataclass() == Some(false) => return Err(not_serializable(type_name)),
        _ => match value.pairs() {
            // dicts, and dataclass instances (their fields)
            Some(pairs) => {
                let mut map = Map::new();
                for (key, item) in pairs {
                    map.insert(key_string(key)?, convert(item, depth + 1)?);
                }
                Value::Object(map)
            }
            None => return Err(not_serializable(type_name)),
        },
    })
}

/// CPython's limit on the decimal digits of an int it writes
/// (`sys.get_int_max_str_digits()`): the answer's `repr` meets it.
pub const INT_MAX_STR_DIGITS: usize = 4300;

/// Whether the answer holds an int CPython would refuse to write
/// (`ValueError: Exceeds the limit (4300 digits) …`), as the CPython guest
/// and the corpus reference report such an answer. Asked before the
/// answer is converted: writing a huge int's digits is quadratic.
pub fn has_int_past_str_limit(value: ObjectRef<'_>, depth: usize) -> bool {
    if depth > MAX_VALUE_DEPTH {
        return false;
    }
    if let Some(bits) = value.int_bits() {
        // 10**4300 needs 14,285 bits: decide by the bits away from that.
        return match bits {
            ..14_280 => false,
            14_290.. => true,
            _ => value.py_repr().trim_start_matches('-').len() > INT_MAX_STR_DIGITS,
        };
    }
    if value.as_str().is_some() {
        return false;
    }
    if let Some(items) = value.items() {
        return items.into_iter().any(|item| has_int_past_str_limit(item, depth + 1));
    }
    value.pairs().is_some_and(|pairs| {
        pairs
            .into_iter()
            .any(|(key, item)| has_int_past_str_limit(key, depth + 1) || has_int_past_str_limit(item, depth + 1))
    })
}

/// An integer of any size from its decimal digits.
fn big_int(digits: &str) -> Result<Number, String> {
    serde_json::from_str(digits).map_err(|_| format!("int {digits} cannot be converted to JSON"))
}

fn not_serializable(type_name: &str) -> String {
    format!("Object of type {type_name} is not JSON serializable")
}

fn key_string(key: ObjectRef<'_>) -> Result<String, String> {
    if let Some(s) = key.as_str() {
        return Ok(s.to_owned());
    }
    match key.type_name() {
        "int" | "float" | "bool" | "NoneType" => Ok(match key.to_json_key() {
            Some(s) => s,
            None => key.py_repr(),
        }),
        other => Err(format!("keys must be str, int, float, bool or None, not {other}")),
    }
}

/// `json.dumps` spells non-string keys as JSON literals: `True` → `"true"`.
trait JsonKey {
    fn to_json_key(&self) -> Option<String>;
}

impl JsonKey for ObjectRef<'_> {
    fn to_json_key(&self) -> Option<String> {
        match self.type_name() {
            "bool" => self.as_bool().map(|b| b.to_string()),
            "NoneType" => Some("null".to_owned()),
            _ => None,
        }
    }
}

/// Converts JSON into a Python value.
pub fn from_json(value: &Value) -> MontyObject {
    match value {
        Value::Null => MontyObject::none(),
        Value::Bool(b) => MontyObject::bool(*b),
        Value::Number(n) => number(n),
        Value::String(s) => MontyObject::string(s.clone()),
        Value::Array(items) => MontyObject::list(items.iter().map(from_json)),
        Value::Object(map) => {
            MontyObject::dict(map.iter().map(|(k, v)| (MontyObject::string(k.clone()), from_json(v))))
        }
    }
}

/// A JSON number as Python's `json.loads` reads it: digits alone are an
/// `int` of any size, anything with a fraction or exponent a `float`
/// (`1e400` is `inf`, as in Python).
fn number(n: &Number) -> MontyObject {
    if let Some(i) = n.as_i64() {
        return MontyObject::int(i);
    }
    let text = n.as_str();
    if !text.contains(['.', 'e', 'E'])
        && let Ok(big) = text.parse::<BigInt>()
    {
        return MontyObject::bigint(big);
    }
    MontyObject::float(text.parse().unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> String {
        let value: Value = serde_json::from_str(text).unwrap();
        let object = from_json(&value);
        serde_json::to_string(&to_json(object.as_ref()).unwrap()).unwrap()
    }

    #[test]
    fn objects_keep_their_key_order_both_ways() {
        assert_eq!(
            round_trip(r#"{"zeta":1,"alpha":{"b":2,"a":3},"mid":[]}"#),
            r#"{"zeta":1,"alpha":{"b":2,"a":3},"mid":[]}"#
        );
    }

    #[test]
    fn integers_of_any_size_stay_integers() {
        assert_eq!(
            round_trip("[1180591620717411303424,-1180591620717411303424,18446744073709551615,-9223372036854775808]"),
            "[1180591620717411303424,-1180591620717411303424,18446744073709551615,-9223372036854775808]"
        );
        let value: Value = serde_json::from_str("1180591620717411303424").unwrap();
        assert_eq!(from_json(&value).as_ref().type_name(), "int");
    }

    #[test]
    fn numbers_with_a_fraction_or_exponent_are_floats() {
        for text in ["1.0", "1e3", "2.5E-3"] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(from_json(&value).as_ref().type_name(), "float", "{text}");
        }
        assert_eq!(round_trip("[1.5,1.0]"), "[1.5,1.0]");
    }

    #[test]
    fn floats_are_spelled_as_json_dumps_spells_them() {
        let floats = MontyObject::list([1e-6, 1e20, 1.5e300, 0.1, 1e16, 2.0, -0.0].map(MontyObject::float));
        assert_eq!(
            serde_json::to_string(&to_json(floats.as_ref()).unwrap()).unwrap(),
            "[1e-06,1e+20,1.5e+300,0.1,1e+16,2.0,-0.0]"
        );
        assert!(to_json(MontyObject::float(f64::INFINITY).as_ref()).is_err());
    }

    #[test]
    fn a_python_big_int_becomes_its_digits() {
        let big = MontyObject::bigint("-123456789012345678901234567890".parse().unwrap());
        assert_eq!(
            serde_json::to_string(&to_json(big.as_ref()).unwrap()).unwrap(),
            "-123456789012345678901234567890"
        );
    }

    #[test]
    fn dict_keys_are_spelled_as_json_dumps_spells_them() {
        let dict = MontyObject::dict([
            (MontyObject::bool(true), MontyObject::int(1)),
            (MontyObject::none(), MontyObject::int(2)),
            (MontyObject::int(3), MontyObject::int(3)),
            (MontyObject::float(1.5), MontyObject::int(4)),
        ]);
        assert_eq!(
            serde_json::to_string(&to_json(dict.as_ref()).unwrap()).unwrap(),
            r#"{"true":1,"null":2,"3":3,"1.5":4}"#
        );
    }

    #[test]
    fn non_finite_floats_and_other_types_are_refused() {
        assert!(to_json(MontyObject::float(f64::NAN).as_ref()).is_err());
        let key = MontyObject::dict([(MontyObject::list([]), MontyObject::none())]);
        assert!(to_json(key.as_ref()).is_err());
    }
}
