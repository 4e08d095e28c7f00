#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Takes the screenshots of the main window that the AppStream metadata
# shows, in light and dark, with a real conversation in it: a scripted
# provider on 127.0.0.1 answers, `kaged --headless` stores the
# conversation, then the window shows it under a virtual X server.
#
# Usage: data/screenshots/take-screenshots.sh BUILD_DIR
set -eu

build=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d)
trap 'kill $provider 2>/dev/null || true; rm -rf "$work"' EXIT

cat > "$work/scenario.json" <<'JSON'
[{"kind": "openai", "chunks": 12, "usage": {"input_tokens": 18, "output_tokens": 140},
  "text": "Use a **list comprehension** with a condition: it reads like the sentence you would say.\n\n```python\ndef evens(numbers):\n    \"\"\"Return the even numbers, in order.\"\"\"\n    return [n for n in numbers if n % 2 == 0]\n\nprint(evens(range(10)))  # [0, 2, 4, 6, 8]\n```\n\nFor a very long input, a generator expression avoids building the list at once:\n\n- `(n for n in numbers if n % 2 == 0)` yields one number at a time\n- `filter()` does the same with a function"}]
JSON

"$build/tools/kaged-fake-provider" --port 0 --scenario "$work/scenario.json" > "$work/provider.log" &
provider=$!
while ! grep -q "http://" "$work/provider.log" 2>/dev/null; do sleep 0.1; done
url=$(grep -o "http://[^ ]*" "$work/provider.log" | head -n 1)

export GSETTINGS_BACKEND=memory
export GSETTINGS_SCHEMA_DIR="$build/data"
provider_args="--provider-kind=openai --provider-url=$url --model=demo"

# The conversation, stored through the local HTTP API.
"$build/src/app/kaged" --headless --data-dir="$work/data" $provider_args \
  --api-port=0 --api-token-file="$work/token" > "$work/headless.log" 2>&1 &
headless=$!
while ! grep -q "http://" "$work/headless.log" 2>/dev/null; do sleep 0.1; done
api=$(grep -o "http://127.0.0.1:[0-9]*" "$work/headless.log" | head -n 1)
auth="Authorization: Bearer $(cat "$work/token")"
for title in "Weekend in Lisbon" "Sourdough starter" "Even numbers in Python"; do
  session=$(curl -sf -H "$auth" -d "{\"title\": \"$title\"}" "$api/api/v1/sessions" |
            grep -o '"id": *[0-9]*' | head -n 1 | grep -o '[0-9]*$')
done
curl -sf -H "$auth" -d '{"content": "How do I keep only the even numbers of a list in Python?"}' \
  "$api/api/v1/sessions/$session/messages" > /dev/null
sleep 2
kill "$headless"
wait "$headless" || true

for scheme in light dark; do
  if [ "$scheme" = dark ]; then style=prefer-dark; else style=default; fi
  xvfb-run -a -s "-screen 0 1280x800x24 -noreset" sh -c "
    gsettings set org.gnome.desktop.interface color-scheme $style 2>/dev/null || true
    ADW_DEBUG_COLOR_SCHEME=$style GSK_RENDERER=cairo GDK_BACKEND=x11 \
      '$build/src/app/kaged' --data-dir='$work/data' $provider_args &
    app=\$!
    sleep 4
    import -window root png:- | convert - -trim +repage '$here/main-window-$scheme.png'
    kill \$app
  "
done
