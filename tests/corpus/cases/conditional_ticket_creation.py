# Open a ticket only for services whose error rate is above a threshold.
tickets = []
for service in ["checkout", "search", "api", "auth"]:
    m = await get_metrics(service, "2024-05-10")
    rate = m["errors"] / m["requests"]
    if rate > 0.005:
        t = await create_ticket(
            title=f"{service}: error rate {rate:.2%}",
            priority="high" if rate > 0.01 else "normal",
            tags=("errors", service),
        )
        tickets.append(t)
{"opened": [t["ticket_id"] for t in tickets], "titles": [t["title"] for t in tickets], "tags": tickets[0]["tags"] if tickets else []}
