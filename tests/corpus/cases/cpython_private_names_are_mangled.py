# A client keeps its token in a private attribute; code outside the class
# cannot read `client.__token` in CPython (the name is mangled to
# `_Client__token`). monty does not mangle names, so `auto` runs this on CPython.
class Client:
    def __init__(self, user, token):
        self.user = user
        self.__token = token

    def header(self):
        return {"Authorization": "Bearer " + self.__token[:4] + "…"}

u = await get_user(2)
client = Client(u["name"], "tok-" + u["email"])
try:
    leaked = client.__token
except AttributeError as e:
    leaked = None
    print("hidden:", type(e).__name__)
{"user": client.user, "header": client.header(), "leaked": leaked, "mangled": client._Client__token.startswith("tok-")}
