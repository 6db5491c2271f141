# Search, read details, then send one summary email with the findings.
hits = await search_docs("deploy", page_size=3)
lines = []
for h in hits["results"]:
    lines.append(f"- {h['title']} ({h['words']} words)")
body = "Deploy docs to review:\n" + "\n".join(lines)
receipt = await send_email(to="team@example.com", subject=f"{len(lines)} deploy docs", body=body)
print(body)
{"sent": receipt["sent"], "message_id": receipt["message_id"], "docs": len(lines)}
