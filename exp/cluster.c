/*
 * cluster.c - Δ of AccUDNN's equation 3 for a parameter server or a ring
 * all-reduce (derivation in cluster.h).
 */
#include "cluster.h"

const char *const cl_sync_names[] = {"ps", "ring", NULL};

void cl_set_pcie(struct cl_cluster *c, const struct hw_profile *hw)
{
	c->pcie_h2d = hw->link[HW_H2D].bw_pinned;
	c->pcie_d2h = hw->link[HW_D2H].bw_pinned;
	c->pcie_lat_h2d = hw->link[HW_H2D].latency;
	c->pcie_lat_d2h = hw->link[HW_D2H].latency;
}

/* n - 1 messages of p / n bytes, one after the other: the push or the
 * pull of the parameter server, or one half of the ring. */
static double exchange(const struct cl_cluster *c, int64_t n, double p)
{
	return (double)(n - 1) *
	       ((double)c->net_latency / 1e9 + p / (double)n / c->net_bw);
}

double cl_delta(const struct cl_cluster *c, int64_t n, uint64_t param_bytes)
{
	if (n <= 1)
		return 0.0;
	double p = (double)param_bytes;
	double net = 2.0 * exchange(c, n, p);
	if (c->sync == CL_SYNC_RING)
		return net;
	double pcie = (double)(c->pcie_lat_d2h + c->pcie_lat_h2d) / 1e9 +
		      p / c->pcie_d2h + p / c->pcie_h2d;
	return pcie + net;
}

double cl_throughput(int64_t n, int64_t batch, double t_iter, double delta)
{
	double t = t_iter + delta;
	return t > 0 ? (double)n * (double)batch / t : 0.0;
}
