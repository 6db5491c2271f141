for i in range(100):
    print("line", i)
x = 1 / 0