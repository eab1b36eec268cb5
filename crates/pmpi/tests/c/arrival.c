/* Exact answers of knob L's arrival dating (csrc/arrival.h), run by tests/c_headers.rs. Exits 1
 * naming the first check that fails. */
#include <stdio.h>
#include <stdlib.h>

#include "arrival.h"

static int failed = 0;

static void eq(const char *what, unsigned long long got, unsigned long long want) {
    if (got != want) {
        printf("FAIL %s: got %llu, want %llu\n", what, got, want);
        failed = 1;
    }
}

int main(void) {
    eq("class of 0 B", (unsigned long long)cpmpi_size_class(0), 0);
    eq("class of 1 B", (unsigned long long)cpmpi_size_class(1), 1);
    eq("class of 8 B", (unsigned long long)cpmpi_size_class(8), 4);
    eq("class of 4095 B", (unsigned long long)cpmpi_size_class(4095), 12);
    eq("class of 4096 B", (unsigned long long)cpmpi_size_class(4096), 13);
    eq("class of 2^63 B", (unsigned long long)cpmpi_size_class(1ull << 63), CPMPI_SIZE_CLASSES - 1);

    cpmpi_oneway w[1];
    cpmpi_dating c = {0, 0, 0};
    cpmpi_oneway_init(w, 1);

    /* No stamp, or a stamp after the completion (another host's clock): the completion. */
    eq("no stamp", cpmpi_arrival(w, &c, 0, 10, 500), 500);
    eq("stamp after completion", cpmpi_arrival(w, &c, 600, 10, 500), 500);
    eq("neither counted", c.watched + c.estimated, 0);

    /* The first of a class: its completion; it sets the least time (1000). */
    eq("first", cpmpi_arrival(w, &c, 1000, 5000, 2000), 2000);
    eq("first's least", w->lmin, 1000);
    eq("first not sampled", w->typ, 0);

    /* Entered before the earliest possible arrival (1000 + 1000 ≥ 1500): watched, dated at the
     * completion, its 1600 sampled as the first typical time, excess 600. */
    eq("watched", cpmpi_arrival(w, &c, 1000, 1500, 2600), 2600);
    eq("typical after one", w->typ, 1600);
    eq("excess", c.excess, 600);

    /* Entered late (t_inj + least 11000 < 20000): dated t_inj + typical 1600, not + least 1000
     * (the rule that dated it 600 ticks too early). */
    eq("unwatched", cpmpi_arrival(w, &c, 10000, 20000, 20100), 11600);
    eq("unwatched not sampled", w->typ, 1600);

    /* ... but never after its completion. */
    eq("estimate capped", cpmpi_arrival(w, &c, 30000, 31200, 31300), 31300);

    /* A watched time is clipped at 4 × the least (a preemption is no one-way time): 1600 moves
     * by (4000 − 1600) / 16 = 150, not by (100000 − 1600) / 16. */
    eq("outlier watched", cpmpi_arrival(w, &c, 40000, 40500, 140000), 140000);
    eq("typical clipped", w->typ, 1750);
    /* A shorter one lowers both: least 800, typical 1750 − (800 − …) → 1750 − 950 / 16 = 1691. */
    eq("short watched", cpmpi_arrival(w, &c, 50000, 50100, 50800), 50800);
    eq("least lowered", w->lmin, 800);
    eq("typical lowered", w->typ, 1691);

    /* Unwatched with only the least known (a class whose messages were never watched): the
     * least, as before. */
    cpmpi_oneway v[1];
    cpmpi_oneway_init(v, 1);
    cpmpi_arrival(v, &c, 1000, 9000, 9500); /* first: least 8500 */
    eq("no typical yet", cpmpi_arrival(v, &c, 20000, 30000, 30100), 28500);

    eq("watched count", c.watched, 5);
    eq("estimated count", c.estimated, 3);

    if (failed) return 1;
    printf("ok\n");
    return 0;
}
