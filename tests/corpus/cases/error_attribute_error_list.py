# Treating a list result as a dict.
files = await list_files("/reports")
for name, size in files["files"].items():
    print(name, size)
