#!/bin/sh
# gen-workload.sh N > FILE: a workload YAML of N forward ops in a chain
# (issue 18's loader measurements: README, "Input limits"). Op i reads
# a(i-1) and parameter w(i), writes a(i); every op gives the same fields.
n=${1:?usage: gen-workload.sh N}
awk -v n="$n" 'BEGIN {
	print "name: gen"; print "batch: 2"; print "tensors:"
	print "  - {name: a0, kind: input, bytes_per_sample: 4KiB}"
	for (i = 1; i <= n; i++) {
		printf "  - {name: w%d, kind: parameter, bytes: %d}\n", i, 4096 + i
		printf "  - {name: a%d, kind: activation, bytes_per_sample: %d}\n", i, 1024 + i
	}
	print "ops:"
	for (i = 1; i <= n; i++) {
		printf "  - name: op%d\n    type: matmul\n    phase: forward\n", i
		printf "    inputs: [a%d, w%d]\n    outputs: [a%d]\n", i - 1, i, i
		printf "    flops_per_sample: %d\n    bytes: %d\n", 1000 * i, 2 * i
	}
}'
