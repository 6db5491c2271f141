"""Turns the runners' raw JSON (target/peers/raw/*.json) into the peer table:
medians per workload and each peer's ratio to chainbox, printed and written
as markdown, plus all raw results merged into one JSON file.

Usage: python -I -S report.py RAW_DIR RESULTS_MD RESULTS_JSON
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# Table order: chainbox first, then from the floor upwards to the heavy peers.
ORDER = [
    'chainbox',
    'chainbox_cpython',
    'native_monty',
    'pydantic_monty',
    'cpython_exec',
    'cpython_subprocess',
    'cpython_subprocess_nosite',
    'smolagents',
    'pyodide',
]
# (column key, header); `per_call` is derived from the 100-call chain.
COLUMNS = [
    ('start', 'start `1 + 1`'),
    ('call_1', '1 call'),
    ('calls_100', '100 calls'),
    ('per_call', 'per call ¹'),
    ('fib25', 'fib(25)'),
    ('loop_1e6', 'loop 10⁶'),
    ('gather_10x50ms', 'gather 10×50 ms'),
]


def fmt_time(us: float) -> str:
    if us < 1000:
        return f'{us:.3g} µs' if us < 100 else f'{us:.0f} µs'
    if us < 1e6:
        return f'{us / 1000:.3g} ms' if us < 1e5 else f'{us / 1000:.0f} ms'
    return f'{us / 1e6:.3g} s'


def fmt_ratio(r: float) -> str:
    return f'{r:.2g}×' if r < 10 else f'{r:.0f}×'


def medians(peer: dict) -> dict[str, float]:
    w = {k: v['median_us'] for k, v in peer['workloads'].items()}
    if 'calls_100' in w and 'start' in w:
        w['per_call'] = (w['calls_100'] - w['start']) / 100
    return w


def main() -> None:
    raw_dir, md_path, json_path = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    machine = json.loads((raw_dir / 'machine.json').read_text())
    peers: dict[str, dict] = {}
    for f in sorted(raw_dir.glob('*.json')):
        if f.name != 'machine.json':
            for p in json.loads(f.read_text()):
                peers[p['peer']] = p
    names = [n for n in ORDER if n in peers] + [n for n in peers if n not in ORDER]
    # A peer whose runner failed is a row saying so (see run.sh).
    failed = {n: peers[n]['failed'] for n in names if 'failed' in peers[n]}
    names = [n for n in names if n not in failed]
    base = medians(peers['chainbox']) if 'chainbox' in peers and 'chainbox' not in failed else {}

    lines = [
        '## chainbox against peers',
        '',
        'Warm medians (one process kept alive, after warm-up) except the subprocess rows,',
        'which time a whole fresh `python3` per chain. In brackets: time ÷ chainbox time',
        '(below 1× means the peer is faster).',
        '',
        '| peer | ' + ' | '.join(h for _, h in COLUMNS) + ' |',
        '| --- |' + ' ---: |' * len(COLUMNS),
    ]
    notes: list[str] = []
    for name in names:
        m = medians(peers[name])
        cells = []
        for key, _ in COLUMNS:
            if key not in m:
                cells.append('n/a')
                continue
            if key == 'per_call' and m[key] <= 0:
                # The 100 calls cost less than the spread of the start time (subprocess rows).
                cells.append('lost in noise')
                continue
            cell = f'{fmt_time(m[key])} ({fmt_ratio(m[key] / base[key])})' if base.get(key) else fmt_time(m[key])
            note = peers[name]['workloads'].get(key, {}).get('note')
            if note:
                notes.append(f'{name}, {key}: {note}')
                cell += ' ²'
            cells.append(cell)
        lines.append(f'| {name} | ' + ' | '.join(cells) + ' |')
    for name, why in failed.items():
        lines.append(f'| {name} | ' + ' | '.join(f'failed ({why})' for _ in COLUMNS) + ' |')
    lines += [
        '',
        '¹ (100-call chain − start) / 100. In the subprocess rows this is mostly the one-time'
        ' `import asyncio` that only scripts which await pay, not the calls.',
        *(f'² {n}.' for n in notes),
        '',
        '| peer | version | what one chain is |',
        '| --- | --- | --- |',
        *(f"| {n} | {peers[n]['version']} | {peers[n]['how']} |" for n in names),
        '',
        'Samples per workload: '
        + '; '.join(
            f"{n} " + '/'.join(str(peers[n]['workloads'][k]['samples']) for k, _ in COLUMNS if k != 'per_call')
            for n in names
        )
        + '.',
    ]
    rated = [n for n in names if peers[n].get('throughput')]
    if rated:
        lines += [
            '',
            f"Trivial chains (`1 + 1`) through one engine: {peers[rated[0]]['throughput']['callers']} callers at once,"
            ' each back to back; CPU is the whole process (every thread) per chain. Last column: one caller,'
            ' back to back (the start column above).',
            '',
            '| peer | chains/s | median | p99 | CPU per chain | CPU per chain, one caller |',
            '| --- | ---: | ---: | ---: | ---: | ---: |',
        ]
        for n in rated:
            t = peers[n]['throughput']
            one = peers[n]['workloads'].get('start', {}).get('cpu_us')
            lines.append(
                f"| {n} | {t['chains_per_s']:.0f} | {fmt_time(t['median_us'])} | {fmt_time(t['p99_us'])} | "
                f"{fmt_time(t['cpu_us'])} | {fmt_time(one) if one else 'n/a'} |"
            )
    extra = peers.get('pyodide', {}).get('extra')
    if extra:
        lines.append(
            f"Pyodide one-time load: {extra['load_ms']:.0f} ms; Node RSS {extra['rss_mib_before_load']:.0f} MiB "
            f"before load, {extra['rss_mib_after_load']:.0f} MiB after, {extra['rss_mib_at_end']:.0f} MiB at the end."
        )
    lines.append(
        f"Machine: {machine['cpus']} CPUs ({machine['cpu']}), load average {machine['loadavg_start']} at start and "
        f"{machine['loadavg_end']} at the end; {machine['started']} to {machine['finished']}; "
        f"{machine['rustc']}, Node {machine['node']}."
    )
    md = '\n'.join(lines) + '\n'
    print(md)
    md_path.write_text(md)
    json_path.write_text(json.dumps({'machine': machine, 'peers': [peers[n] for n in names]}, indent=2) + '\n')


if __name__ == '__main__':
    main()
