# Notifications built in a loop but never awaited; lookups are awaited.
notified = []
for uid in [1, 2]:
    user = await get_user(uid)
    send_email(user["email"], "Welcome", "Hello " + user["name"])
    notified.append(user["email"])
{"notified": notified}
