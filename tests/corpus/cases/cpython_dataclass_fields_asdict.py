from dataclasses import dataclass, asdict, fields

@dataclass
class Member:
    id: int
    name: str
    team: str
    active: bool = True

members = []
for uid in [1, 3, 6]:
    u = await get_user(uid)
    members.append(Member(**{f.name: u[f.name] for f in fields(Member)}))
print([f.name for f in fields(Member)])
[asdict(m) for m in members if m.team == "research"]
