# A generator that cuts a tool's result list into fixed-size batches.
def batches(items, size):
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch

hits = await search_docs(query="billing", page_size=20)
ids = [r["id"] for r in hits["results"]]
summaries = []
for n, batch in enumerate(batches(ids, 3), start=1):
    t = await create_ticket(title=f"Review billing docs batch {n}", tags=batch)
    summaries.append((t["ticket_id"], len(t["tags"])))
print(f"{len(ids)} docs in {len(summaries)} tickets")
summaries
