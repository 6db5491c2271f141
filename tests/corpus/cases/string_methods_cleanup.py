# Cleaning up tool text with common str methods.
notes = (await read_file("/reports/notes.txt"))["content"]
first, _, rest = notes.partition("\n")
words = first.rstrip(".").split(" ", 2)
out = {
    "title": first.title(),
    "cap": rest.strip().capitalize(),
    "words": words,
    "zfill": str(42).zfill(6),
    "center": "[" + "q2".center(8, "-") + "]",
    "starts": [w for w in first.split() if w.startswith(("b", "n", "w"))],
    "replace": first.replace("better", "worse", 1),
    "count_e": notes.count("e"),
    "find": (notes.find("East"), notes.find("nope")),
    "swap": "Hello World".swapcase(),
    "is": ["42".isdigit(), "abc".isalpha(), " ".isspace(), "Ab".isupper()],
}
out
