# A custom exception class raised by a helper and caught by the caller.
class UserNotFound(Exception):
    def __init__(self, user_id):
        super().__init__(f"no user {user_id}")
        self.user_id = user_id

async def find_user(user_id):
    try:
        return await get_user(user_id)
    except RuntimeError:
        raise UserNotFound(user_id) from None

found, missing = [], []
for uid in [2, 42, 5, 99]:
    try:
        u = await find_user(uid)
        found.append(u["name"])
    except UserNotFound as e:
        missing.append({"id": e.user_id, "why": str(e), "is_lookup": isinstance(e, Exception)})
{"found": found, "missing": missing}
