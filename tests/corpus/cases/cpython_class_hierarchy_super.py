# A small class hierarchy: the subclasses extend __init__ through super().
class Notice:
    def __init__(self, user):
        self.to = user["email"]
        self.name = user["name"]

    def subject(self):
        return "Notice"

class WelcomeNotice(Notice):
    def __init__(self, user, team):
        super().__init__(user)
        self.team = team

    def subject(self):
        return f"Welcome to {self.team}, {self.name.split()[0]}"

class ReminderNotice(Notice):
    def subject(self):
        return "Reminder: " + super().subject().lower()

u1 = await get_user(5)
u2 = await get_user(8)
notices = [WelcomeNotice(u1, u1["team"]), ReminderNotice(u2)]
sent = []
for n in notices:
    r = await send_email(to=n.to, subject=n.subject())
    sent.append({"kind": type(n).__name__, "subject": n.subject(), "id": r["message_id"]})
sent
