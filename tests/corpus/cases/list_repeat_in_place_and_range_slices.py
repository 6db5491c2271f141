# `xs *= n` repeats the list itself: the caller's list, passed to a function
# that pads it, grows too (monty rebound the name to a new list). A range
# sliced keeps the slice's stop, as CPython's repr shows (`range(1, 5, 3)`,
# where monty wrote the stop after the last item, `range(1, 7, 3)`).
def pad(row, times):
    row *= times


row = [0, 1]
pad(row, 3)
padded = list(row)
alias = row
row *= 0
grid = [[1]] * 2
cells = grid
grid *= 2
r = range(10)
[padded, row, alias is row, len(cells), r[1:5:3], r[::-1], r[8:2:-3], range(0, 20, 4)[1:-1], list(r[1:5:3])]
