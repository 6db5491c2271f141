from dataclasses import dataclass, asdict

@dataclass
class Ticket:
    ticket_id: str
    title: str
    priority: str

t = await create_ticket(title="Login page slow", priority="high", tags=["perf"])
ticket = Ticket(t["ticket_id"], t["title"], t["priority"])
asdict(ticket)
