import asyncio

async def profile(user_id):
    user = await get_usr(user_id)   # typo for get_user
    return user["name"]

names = await asyncio.gather(profile(1), profile(2))
names
