# plot-lib.gp - what every plot-*.gp shares (issue 34): a palette that
# stays apart for colour-blind readers and in print, the marks of series
# past the palette, and the reading of the series' titles. Loaded by the
# scripts as `load lib` (gpumemsim passes lib, its path).
#
# Colours: Okabe and Ito's palette ("Color Universal Design", 2002; the
# one Wong recommends in Nature Methods 8:441, 2011, "Points of view:
# Color blindness"), without its yellow, which vanishes on white paper,
# and with a grey in its place; ordered dark and light alternately so
# that neighbouring series differ in lightness too (readable in grey).
palette = "#0072B2 #D55E00 #009E73 #CC79A7 #000000 #E69F00 #56B4E9 #999999"
col(i) = word(palette, (i - 1) % 8 + 1)
# a point type per series (filled circle, square, triangle, inverted
# triangle, diamond, plus, star, open circle; a cross (2) marks out of
# memory in every plot); series 9.. change the shape
# against their colour's and are dashed, so no two series look alike
ptypes = "7 5 9 11 13 1 3 6"
ptype(i) = int(word(ptypes, (i - 1 + int((i - 1) / 8)) % 8 + 1))
dtype(i) = int((i - 1) / 8) % 4 + 1
# bars have no dash: past the palette's 8 a bar is a lighter fill of the
# colour (series 9-16 at 0.35, 17-24 at 0.85 again, ...)
fdens(i) = int((i - 1) / 8) % 2 == 0 ? 0.85 : 0.35
# Titles: one word a series, "PANEL|POLICY[|STATUS]" (exp_out.c,
# title_word). PANEL is the workload, then "@batch=N" and "@budget=B"
# where the series has one.
bar1(s) = strstrt(s, '|')
f_panel(s) = bar1(s) ? s[1:bar1(s) - 1] : s
f_rest(s) = bar1(s) ? s[bar1(s) + 1:] : ''
f_pol(s) = bar1(f_rest(s)) ? f_rest(s)[1:bar1(f_rest(s)) - 1] : f_rest(s)
f_status(s) = bar1(f_rest(s)) ? f_rest(s)[bar1(f_rest(s)) + 1:] : 'ok'
# replace every a in s with b
rep(s, a, b) = strstrt(s, a) ? s[1:strstrt(s, a) - 1] . b . rep(s[strstrt(s, a) + strlen(a):], a, b) : s
# "resnet50@batch=32@budget=4.0_GiB" -> "resnet50, batch 32, budget 4.0 GiB"
panel_title(s) = rep(rep(rep(rep(s, '@', ', '), '=', ' '), '_GiB', ' GiB'), 'whole_device', 'the whole device')
# the workload alone
wl_name(s) = strstrt(s, '@') ? s[1:strstrt(s, '@') - 1] : s
# a policy label without its parameters' keys, for tics and crowded keys:
# "vdnnpp(offload=all,algo=m)" -> "vdnnpp(all,m)"
lastd(s, k) = k < 1 ? 0 : (s[k:k] eq '(' || s[k:k] eq ',') ? k : lastd(s, k - 1)
# (a key whose value is true or false stays: "atp=false")
isbool(t) = t[1:4] eq 'true' || t[1:5] eq 'false'
eqat(s) = strstrt(s, '=')
nokeys(s) = eqat(s) ? (isbool(s[eqat(s) + 1:]) ? s[1:eqat(s)] : s[1:lastd(s, eqat(s) - 1)]) . nokeys(s[eqat(s) + 1:]) : s
# panels in a grid: columns for n panels
grid_cols(n) = n <= 3 ? n : (n <= 4 ? 2 : (n <= 9 ? 3 : 4))
grid_rows(n) = int((n + grid_cols(n) - 1) / grid_cols(n))
