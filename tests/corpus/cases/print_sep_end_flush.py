# print with sep and end, several values, a trailing line without newline.
cities = ["Paris", "Lima", "Oslo"]
for c in cities:
    w = await get_weather(c)
    print(c, w["temp"], w["conditions"], sep=" | ", end=";\n")
print("a", "b", "c", sep="")
print()
print("done", end="")
