import asyncio

# The model forgot `await`: the email must not be sent.
send_email(to="ops@example.com", subject="Nightly report")
await asyncio.sleep(0.3)
"report queued"
