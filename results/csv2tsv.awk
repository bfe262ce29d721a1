# csv2tsv.awk - summary.csv -> "field<TAB>field..." for the plot scripts
# (results/plots.sh, results/plot-llm-policies.sh): quoted fields
# unquoted (RFC 4180, as exp_csv_str writes them: a comma or a doubled
# quote inside), a cell written with a leading ' against spreadsheet
# formulas restored, blanks inside a field made _ (gnuplot splits on them).
#   awk -f results/csv2tsv.awk DIR/summary.csv
function split_csv(line, f,    n, i, c, q, cur) {
	n = 0; cur = ""; q = 0
	for (i = 1; i <= length(line); i++) {
		c = substr(line, i, 1)
		if (q) {
			if (c == "\"") {
				if (substr(line, i + 1, 1) == "\"") { cur = cur "\""; i++ }
				else q = 0
			} else cur = cur c
		} else if (c == "\"") q = 1
		else if (c == ",") { f[++n] = cur; cur = "" }
		else cur = cur c
	}
	f[++n] = cur
	return n
}
{
	n = split_csv($0, f); s = ""
	for (i = 1; i <= n; i++) {
		v = f[i]
		if (NR > 1 && v ~ /^'[-=+@]/) v = substr(v, 2)
		gsub(/[ \t]/, "_", v)
		s = s (i > 1 ? "\t" : "") v
	}
	print s
}
