x = ["a" * 1000]
while True:
    x = x + x