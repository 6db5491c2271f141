# A chat-API-shaped tool result: {"id", "role", "content": [{"type": "text", "text"}]}.
msgs = [await get_message("t1", i) for i in range(2)]
transcript = [f"{m['role']}: {' '.join(b['text'] for b in m['content'])}" for m in msgs]
print("\n".join(transcript))
{"ids": [m["id"] for m in msgs], "last_role": msgs[-1]["role"]}
