# A high-risk call (`send_email`) that needs approval. Denied, it raises
# PermissionError, which the script catches.
#
#   chainbox run examples/chains/send_email.py --tools examples/tools/manifest.toml --approve deny --json
#   chainbox run examples/chains/send_email.py --tools examples/tools/manifest.toml --approve auto --json
try:
    await send_email(to="ops@example.com", subject="Nightly report")
    outcome = "sent"
except PermissionError:
    outcome = "caught"
outcome
