# The chain's answer is a big integer computed in the script.
r = await big_number(10)
r["n"] ** 7
