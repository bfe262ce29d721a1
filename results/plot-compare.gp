# plot-compare.gp - one iteration of `gpumemsim compare`: predicted and
# measured intervals per engine, side by side. Called by gpumemsim with:
# dat (timeline.dat: start_ms end_ms row side; row 4 the iteration, 3
# compute, 2 H2D, 1 D2H; side 0 predicted, 1 measured), out, term
# (png|svg), titles ("predicted measured"), xlabel, ptitle, lib.
if (term eq 'png') { set terminal pngcairo size 1400,500 noenhanced } else { set terminal svg size 1400,500 noenhanced }
set output out
load lib
set title ptitle
set xlabel xlabel
set ytics ("iteration" 4, "compute" 3, "H2D" 2, "D2H" 1)
set yrange [0.4:4.6]
set key outside right top
set grid x
set style fill solid 0.6 border -1
# predicted above each row's line, measured below it
plot dat using (($4==0)?($1+$2)/2:NaN):($3+0.2):(($2-$1)/2):(0.17) with boxxyerror lc rgb col(1) title word(titles, 1), \
     dat using (($4==1)?($1+$2)/2:NaN):($3-0.2):(($2-$1)/2):(0.17) with boxxyerror lc rgb col(2) title word(titles, 2)
