# The script's own async helper is called without await: its email is never sent.
async def notify(user_id):
    user = await get_user(user_id)
    return await send_email(to=user["email"], subject="Your report is ready")

notify(1)
summary = await get_user(2)
summary["name"]
