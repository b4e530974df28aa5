# bench/scale-plot.gp — the plot of docs/notes/scale.md: wall seconds and
# peak RSS of each bench/scale row against the number of files, log-log,
# from docs/notes/scale-data.tsv (files, row, seconds, MiB).
# (Debian: apt-get install gnuplot-nox)
#   gnuplot -e "data='docs/notes/scale-data.tsv'; out='docs/notes/scale.png'" bench/scale-plot.gp
if (!exists("data")) data = 'docs/notes/scale-data.tsv'
if (!exists("out")) out = 'docs/notes/scale.png'
set terminal pngcairo size 1200,500 font ",10"
set output out
set datafile separator "\t"
set multiplot layout 1,2
rows = "snap-full snap-same snap-change send-full send-i recv-full recv-same recv-change restore gc"
set logscale xy
set xlabel "files"
set key left top
set grid
set title "wall seconds"
plot for [r in rows] data using ($1):(strcol(2) eq r ? $3 : 1/0) with linespoints title r
set title "peak RSS (MiB); issue 14's bound: 64"
unset logscale y
set yrange [0:100]
plot for [r in rows] data using ($1):(strcol(2) eq r ? $4 : 1/0) with linespoints title r, \
	64 with lines dashtype 2 lc rgb "black" title "64 MiB"
unset multiplot
