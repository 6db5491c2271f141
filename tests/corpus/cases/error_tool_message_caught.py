# The tool's error text reaches the script: trimmed, as the tool printed it.
messages = []
for msg in ["disk full", "  padded message  ", "line one\nline two"]:
    try:
        await fail(message=msg)
    except RuntimeError as e:
        messages.append(str(e))
try:
    await create_ticket(title="Printer on fire", priority="critical")
except RuntimeError as e:
    messages.append(str(e))
print(messages)
messages
