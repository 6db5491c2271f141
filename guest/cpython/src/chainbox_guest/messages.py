"""The JSON messages the guest exchanges with the host (guest/protocol's
`Finish`, `ScriptResult`, `CallOutcome`...): one encoder and decoder bound
at build time, and the decoding of a call's outcome into what awaiting it
gives."""

import json


def _script_error(exc_type, message, *, compile=False, line=None, tb=""):
    return {
        "status": "error",
        "compile": compile,
        "exc_type": exc_type,
        "message": message,
        "line": line,
        "traceback": tb,
        "memory_limit": False,
    }


def _internal_error(message):
    """A `Finish` for a chain that ended before (or outside) the script."""
    return {"result": _script_error("InternalError", message), "warnings": []}


# One encoder for every message: `json.dumps(..., ensure_ascii=False)`
# builds a new one per call, a visible share of each tool call's cost.
# Both are bound here, at build time: a script that replaces `json.dumps`
# or `json.loads` in its own chain cannot break the guest's messages. Where
# the stdlib's C accelerator is there (it is in the component), they call
# it directly: `JSONEncoder.encode` and `JSONDecoder.decode` are two Python
# frames and a regex each, a visible share of every tool call.
def _json_encoder():
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return json.JSONEncoder(ensure_ascii=False).encode

    def unencodable(value):
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    # No circular-reference markers: every message is built by `to_json`,
    # which is depth-bounded, or by the guest itself.
    encoder = make(None, unencodable, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)
    join = "".join

    def encode(value):
        return join(encoder(value, 0))

    return encode


def _json_scanner():
    """`scan(text, index) -> (value, end)`: the JSON value at `index`;
    raises StopIteration or ValueError where there is none."""
    make = getattr(json.scanner, "c_make_scanner", None)
    if make is None:
        return json.JSONDecoder().raw_decode
    return make(json.JSONDecoder())


def _json_decoder():
    scan = _JSON_SCAN

    def decode(text):
        try:
            value, end = scan(text, 0)
        except StopIteration as stop:
            raise ValueError(f"Expecting value: char {stop.value}") from None
        if end != len(text) and text[end:].strip():
            raise ValueError(f"Extra data: char {end}")
        return value

    return decode


_JSON_ENCODE = _json_encoder()
_JSON_SCAN = _json_scanner()
_JSON_DECODE = _json_decoder()


def _encode(message):
    """JSON text for the host; raises if it could not cross (a lone
    surrogate in a str cannot be UTF-8, a huge int has no decimal form)."""
    text = _JSON_ENCODE(message)
    if not text.isascii():  # O(1): CPython knows; only non-ASCII can fail
        text.encode("utf-8")
    return text


def _wire(text):
    """`text` made UTF-8-safe for output the guest must deliver anyway
    (stdout, the Finish): lone surrogates become U+FFFD-like '?'."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


# How each CallOutcome status that is not "ok" reaches the script.
_OUTCOME_EXCEPTIONS = {
    "error": RuntimeError,
    "denied": PermissionError,
    "timeout": TimeoutError,
    "invalid": ValueError,
    "not_found": NameError,
}


def _outcome_value(outcome):
    """What awaiting a call with this `CallOutcome` (decoded JSON) gives:
    its value, or the exception it raises."""
    if isinstance(outcome, dict):
        status = outcome.get("status")
        if status == "ok" and "value" in outcome:
            return outcome["value"]
        exc_type = _OUTCOME_EXCEPTIONS.get(status)
        if exc_type is not None and isinstance(outcome.get("message"), str):
            raise exc_type(outcome["message"])
    raise RuntimeError(f"malformed call outcome message: {_short_repr(outcome)}")


def _decode_call_outcome(text):
    """The decoded `CallOutcome` of a host `call`; a malformed one is the
    call's failure, as in a `Completions`."""
    try:
        return _JSON_DECODE(text)
    except ValueError as exc:
        raise RuntimeError(f"malformed call outcome message: {exc}") from None


def _decode_outcome(text):
    """What awaiting a call whose encoded `CallOutcome` is `text` gives."""
    # The host writes a success as exactly this head, the value and "}":
    # scanning the value alone skips a dict and its two keys per call (the
    # tool calls' hot path). Anything else takes the general path.
    if text.startswith(_OK_HEAD):
        try:
            value, end = _JSON_SCAN(text, _OK_HEAD_LEN)
        except (StopIteration, ValueError):
            pass
        else:
            if end == len(text) - 1 and text[end] == "}":
                return value
    return _outcome_value(_decode_call_outcome(text))


_OK_HEAD = '{"status":"ok","value":'
_OK_HEAD_LEN = len(_OK_HEAD)


def _short_repr(value):
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."
