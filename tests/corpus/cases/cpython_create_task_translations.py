import asyncio

# Start one translation task per language up front, then collect them.
phrases = ["hello", "thank you"]
tasks = {}
for lang in ["fr", "es", "de"]:
    for p in phrases:
        tasks[(lang, p)] = asyncio.create_task(translate(p, lang))
done = {}
for (lang, p), task in tasks.items():
    r = await task
    done.setdefault(lang, []).append(r["text"])
print(all(t.done() for t in tasks.values()))
done
