# Sourced by the benchmark scripts: median prints the median of the numbers on its input, one a
# line: the middle one, the mean of the middle two for an even count, 0 for none.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
