# Walk list_users while has_more, then look up each user for details.
ids = []
page = 1
while True:
    resp = await list_users(page=page)
    ids.extend(u["id"] for u in resp["users"])
    if not resp["has_more"]:
        break
    page += 1

active_emails = []
for uid in ids:
    user = await get_user(user_id=uid)
    if user["active"]:
        active_emails.append(user["email"])
print(f"{len(ids)} users on {page} pages, {len(active_emails)} active")
{"pages": page, "users": len(ids), "active": active_emails}
