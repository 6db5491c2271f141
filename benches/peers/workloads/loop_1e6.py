# CPU: a tight loop of 10**6 iterations.
total = 0
for i in range(1000000):
    total += i
total
