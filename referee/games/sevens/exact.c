/* Exact expectimax of a Sevens-family deal with known hands (the C twin of exact.py).
 *
 * The deal is one where the only pass is the forced one (must play, no free passes, no
 * elimination, no skips, the opening card already on the table): its state is then the
 * table and the seat to act, every hand being its cards at the root minus the table.
 * The value of a state is the probability that seat `hero` wins the deal when `hero`
 * plays to maximise it and every other seat s plays by its model: with probability
 * share[s] the heuristic's move (uniform over its best-scoring cards), otherwise a
 * uniformly random legal card. With hero_max off, `hero` too moves by its model after its
 * first card (the value of a card followed by the heuristic: one step of policy
 * improvement, which needs no knowledge of the other hands later on). States are memoised in an open-addressing table; the
 * solve gives up (returns -1) beyond `node_limit` states.
 *
 * exact.py builds this file with the system C compiler at first use and calls sx_solve
 * through ctypes; tests/ladder/test_exact.py checks it against the Python solver.
 */
#include <stdint.h>
#include <stdlib.h>

#define ROW 0x1fffULL

typedef struct {
    uint64_t key; /* table | to_act << 52 | 1 << 63; 0 = empty */
    double value;
} Entry;

typedef struct {
    int n, hero, hero_max;
    uint64_t hands[8];
    const uint16_t *rowp;   /* 8192 entries: the playable rank bits of a row mask */
    const int8_t *lanes;    /* [52][2][13]: the cards beyond a card per lane, -1 ends */
    double share[8];
    Entry *tab;
    uint64_t mask;
    long used, limit;
    int failed;
} Ctx;

static uint64_t playable(const Ctx *c, uint64_t t) {
    return (uint64_t)c->rowp[t & ROW] | (uint64_t)c->rowp[(t >> 13) & ROW] << 13 |
           (uint64_t)c->rowp[(t >> 26) & ROW] << 26 | (uint64_t)c->rowp[(t >> 39) & ROW] << 39;
}

/* heuristic.card_score: LEADS_ON 100, DEPENDENCY 1, GAP 0.5, RELEASE 1. */
static double card_score(const Ctx *c, int card, uint64_t rest, uint64_t table) {
    double score = 0.0;
    for (int l = 0; l < 2; l++) {
        const int8_t *lane = c->lanes + (card * 2 + l) * 13;
        int mine = 0, gap = 0, dependency = 0, tail = 0;
        for (int k = 0; k < 13 && lane[k] >= 0; k++) {
            uint64_t bit = 1ULL << lane[k];
            if (rest & bit) {
                if (!mine) {
                    gap = tail;
                    mine = 1;
                }
                dependency += tail;
                tail = 0;
            } else if (!(table & bit)) {
                tail += 1;
            }
        }
        if (mine)
            score += 100.0 + 1.0 * dependency + 0.5 * gap;
        else
            score -= 1.0 * tail;
    }
    return score;
}

static double solve(Ctx *c, uint64_t table, int seat);

static void insert(Ctx *c, uint64_t key, double value) {
    for (uint64_t h = (key * 0x9E3779B97F4A7C15ULL) >> 20;; h++) {
        Entry *e = &c->tab[h & c->mask];
        if (!e->key) {
            e->key = key;
            e->value = value;
            c->used++;
            return;
        }
    }
}

/* Double the memo (it is kept at most half full); 0 when out of memory. */
static int grow(Ctx *c) {
    Entry *old = c->tab;
    uint64_t old_size = c->mask + 1;
    Entry *tab = calloc(2 * old_size, sizeof(Entry));
    if (!tab) return 0;
    c->tab = tab;
    c->mask = 2 * old_size - 1;
    c->used = 0;
    for (uint64_t i = 0; i < old_size; i++)
        if (old[i].key) insert(c, old[i].key, old[i].value);
    free(old);
    return 1;
}

static double child(Ctx *c, uint64_t table, int seat, int card) {
    uint64_t t2 = table | 1ULL << card;
    if (!(c->hands[seat] & ~t2)) return seat == c->hero ? 1.0 : 0.0;
    return solve(c, t2, seat + 1 < c->n ? seat + 1 : 0);
}

static double solve(Ctx *c, uint64_t table, int seat) {
    if (c->failed) return 0.0;
    int passes = 0;
    uint64_t able;
    for (;;) { /* forced passes: the next seat */
        able = c->hands[seat] & ~table & playable(c, table);
        if (able) break;
        if (++passes >= c->n) return 0.0; /* nobody can play: not a Sevens position */
        seat = seat + 1 < c->n ? seat + 1 : 0;
    }
    uint64_t key = table | (uint64_t)seat << 52 | 1ULL << 63;
    uint64_t h0 = (key * 0x9E3779B97F4A7C15ULL) >> 20;
    for (uint64_t h = h0;; h++) {
        Entry *e = &c->tab[h & c->mask];
        if (e->key == key) return e->value;
        if (!e->key) break;
    }
    double value;
    if (seat == c->hero && c->hero_max) {
        value = -1.0;
        for (uint64_t m = able; m; m &= m - 1) {
            double v = child(c, table, seat, __builtin_ctzll(m));
            if (v > value) value = v;
        }
    } else {
        int count = 0, ties = 0;
        double total = 0.0, best_total = 0.0, best_score = -1e9;
        double share = c->share[seat];
        uint64_t rest_all = c->hands[seat] & ~table;
        for (uint64_t m = able; m; m &= m - 1) {
            int card = __builtin_ctzll(m);
            double v = child(c, table, seat, card);
            total += v;
            count++;
            if (share > 0.0) {
                double s = card_score(c, card, rest_all & ~(1ULL << card), table);
                if (s > best_score) {
                    best_score = s;
                    best_total = v;
                    ties = 1;
                } else if (s == best_score) {
                    best_total += v;
                    ties++;
                }
            }
        }
        value = (1.0 - share) * (total / count);
        if (share > 0.0) value += share * (best_total / ties);
    }
    if (c->failed) return 0.0;
    if (c->used >= c->limit || (2 * (uint64_t)(c->used + 1) > c->mask && !grow(c))) {
        c->failed = 1;
        return 0.0;
    }
    insert(c, key, value); /* the table may have grown below: probe again */
    return value;
}

/* The value of each legal card of `hero` (to act at `table`), written to out[card]; after
 * that card `hero` maximises (hero_max) or plays by its model, share[hero];
 * returns the number of states solved, or -1 past node_limit (out is then undefined). */
long sx_solve(int n, int hero, int hero_max, const uint64_t *hands, uint64_t table,
              const uint16_t *rowp, const int8_t *lanes, const double *share, long node_limit,
              double *out) {
    Ctx c;
    c.n = n;
    c.hero = hero;
    c.hero_max = hero_max;
    for (int s = 0; s < n && s < 8; s++) {
        c.hands[s] = hands[s];
        c.share[s] = share[s];
    }
    c.rowp = rowp;
    c.lanes = lanes;
    uint64_t cap = 4096;
    c.tab = calloc(cap, sizeof(Entry));
    if (!c.tab) return -1;
    c.mask = cap - 1;
    c.used = 0;
    c.limit = node_limit;
    c.failed = 0;
    uint64_t able = hands[hero] & ~table & playable(&c, table);
    for (uint64_t m = able; m; m &= m - 1) {
        int card = __builtin_ctzll(m);
        out[card] = child(&c, table, hero, card);
    }
    long used = c.failed ? -1 : c.used;
    free(c.tab);
    return used;
}
