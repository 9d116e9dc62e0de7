#!/bin/sh
# Says how the payload arrived, and where the tool's HOME and TMPDIR are.
echo "stdin: $(wc -c | tr -d ' ')"
echo "file: $(wc -c < "$ASTRA_PAYLOAD_FILE" | tr -d ' ')"
echo "env: ${#ASTRA_PAYLOAD}"
echo "home: $HOME"
echo "tmp: $TMPDIR"
touch "$HOME/.cache" "$TMPDIR/scratch" || echo "cannot write HOME or TMPDIR"
