# Chain start: the smallest script, so only the cost of starting a chain shows.
1 + 1
