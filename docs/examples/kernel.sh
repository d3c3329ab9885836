#!/bin/sh
# kernel.sh ROWS: answers each line of numbers with their f64 sum, in order below 4
# rows and in two halves (each in order, then added) from 4 rows on
rows=$1
while read -r line; do
    echo "$line" | awk -v m="$rows" '{
        h = (m < 4) ? NF : int(NF / 2)
        a = 0; for (i = 1; i <= h; i++) a += $i
        b = 0; for (i = h + 1; i <= NF; i++) b += $i
        printf "%.17g\n", (h == NF) ? a : a + b }'
done
