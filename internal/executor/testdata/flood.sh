#!/bin/sh
# 50 MB of output, then a last line.
head -c 52428800 /dev/zero | tr '\0' 'x'
echo
echo "THE END"
