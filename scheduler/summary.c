/*
 * scheduler/summary.c - the summary of a completed job: the workers' DONE
 * statistics, per worker and for the whole job, printed and written to
 * output.dir/summary.csv.
 */
#include <stdio.h>

#include "runtime/clock.h"
#include "common/output.h"
#include "proto/wire.h"
#include "scheduler/state.h"

/* Per-worker rows of the summary, also written to DIR/summary.csv. The
 * straggler effect (TicTac §6) is the largest share of its time any worker
 * spent waiting for parameters. */
static void write_summary_csv(coord *c)
{
	FILE *f = ps_output_open(c->cfg, "summary.csv");

	if (!f)
		return;
	fprintf(f, "worker,iterations,seconds,samples_per_s,wait_s,"
		"wait_share,efficiency,speedup_bound,bytes_pushed,"
		"bytes_received\n");
	for (uint32_t r = 0; r < c->workers; r++) {
		const ps_wire_done *d = &c->members[1 + c->servers + r].stats;
		fprintf(f, "%u,%llu,%.6f,%.3f,%.6f,%.6f,%.6f,%.6f,%llu,%llu\n",
			r, (unsigned long long)d->iterations, d->seconds,
			d->samples_per_second, d->wait_seconds,
			d->seconds > 0 ? d->wait_seconds / d->seconds : 0.0,
			d->efficiency, d->speedup_bound,
			(unsigned long long)d->bytes_pushed,
			(unsigned long long)d->bytes_received);
	}
	fclose(f);
}

void psi_sched_print_summary(coord *c)
{
	double secs = (double)(ps_now_ms() - c->started_ms) / 1000.0;
	uint64_t pushed = 0, received = 0, iters = 0;
	double straggler = 0.0, samples = 0.0, eff = 0.0;
	int replay = 0;

	for (uint32_t r = 0; r < c->workers; r++) {
		const ps_wire_done *d =
			&c->members[1 + c->servers + r].stats;
		pushed += d->bytes_pushed;
		received += d->bytes_received;
		if (d->iterations > iters)
			iters = d->iterations;
		if (d->seconds > 0 && d->wait_seconds / d->seconds > straggler)
			straggler = d->wait_seconds / d->seconds;
		samples += d->samples_per_second;
		eff += d->efficiency / c->workers;
		replay |= d->samples_per_second > 0;
	}
	printf("summary: job %016llx finished: %u worker(s) x %u server(s), "
	       "%llu iterations, %.3f s since the WELCOME, %.2f MiB pushed, "
	       "%.2f MiB received\n",
	       (unsigned long long)c->job_id, c->workers, c->servers,
	       (unsigned long long)iters, secs, (double)pushed / 1048576.0,
	       (double)received / 1048576.0);
	for (uint32_t r = 0; r < c->workers; r++) {
		const ps_wire_done *d =
			&c->members[1 + c->servers + r].stats;
		double rate = d->seconds > 0 ? (double)d->iterations /
						       d->seconds
					     : 0.0;
		if (replay)
			printf("summary: worker %u: %llu iterations in %.3f s "
			       "(%.2f it/s, %.1f samples/s), waited %.3f s "
			       "for parameters, E %.3f\n",
			       r, (unsigned long long)d->iterations,
			       d->seconds, rate, d->samples_per_second,
			       d->wait_seconds, d->efficiency);
		else {
			/* a program on the client library gives its time
			 * and loss where it has them (0: none) */
			char t[64] = "", l[64] = "";
			if (d->seconds > 0)
				snprintf(t, sizeof(t), " in %.3f s (%.2f it/s)",
					 d->seconds, rate);
			if (d->last_loss != 0)
				snprintf(l, sizeof(l), ", last loss %.6f",
					 d->last_loss);
			printf("summary: worker %u: %llu iterations%s%s\n", r,
			       (unsigned long long)d->iterations, t, l);
		}
	}
	if (replay) {
		const ps_wire_done *d0 = &c->members[1 + c->servers].stats;
		printf("summary: throughput %.1f samples/s, ordering "
		       "efficiency E %.3f (mean), speedup bound S %.3f, "
		       "straggler effect %.3f\n",
		       samples, eff, d0->speedup_bound, straggler);
	}
	fflush(stdout);
	write_summary_csv(c);
}
