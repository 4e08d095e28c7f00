#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Checks po/POTFILES.in: sorted, no duplicates, every entry exists, and
# every source file with a translatable string is listed, so no user-visible
# text escapes the translators.

import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else '.').resolve()
potfiles = root / 'po' / 'POTFILES.in'

entries = []
for line in potfiles.read_text(encoding='utf-8').splitlines():
    line = line.strip()
    if line and not line.startswith('#'):
        entries.append(line)

problems = []

if entries != sorted(entries):
    problems.append('POTFILES.in is not sorted')
if len(entries) != len(set(entries)):
    problems.append('POTFILES.in lists a file twice')
for entry in entries:
    if not (root / entry).is_file():
        problems.append(f'{entry} is listed but does not exist')

c_marker = re.compile(r'(?<![\w])(?:_|N_|C_|NC_|g_dngettext|ngettext)\s*\(')
ui_marker = re.compile(r'translatable="yes"')

wanted = set()
for path in sorted((root / 'src').rglob('*')):
    if not path.is_file():
        continue
    relative = path.relative_to(root).as_posix()
    text = path.read_text(encoding='utf-8', errors='replace')
    if path.suffix in ('.c', '.h') and c_marker.search(text):
        wanted.add(relative)
    elif path.suffix == '.ui' and ui_marker.search(text):
        wanted.add(relative)

for path in sorted((root / 'data').glob('*.in')) + sorted((root / 'data').glob('*.gschema.xml')):
    relative = path.relative_to(root).as_posix()
    if relative.endswith('.service.in'):
        continue
    wanted.add(relative)

for missing in sorted(wanted - set(entries)):
    problems.append(f'{missing} has translatable strings but is not in POTFILES.in')

for problem in problems:
    print(problem)

sys.exit(1 if problems else 0)
