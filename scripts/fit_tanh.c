/*
 * fit_tanh.c - the rational approximation of tanh that the classic families
 * (kind = "additive" and the luong concat score) evaluate in their hot loop:
 *
 *   tanh(x) ~= x P(x^2) / Q(x^2)  on 0 <= x <= XMAX,  Q(0) = 1,
 *
 * P of degree NP - 1 and Q of degree NQ in x^2, fitted to the relative error
 * by weighted linear least squares: x P - f Q = f at Chebyshev-spaced points,
 * each equation divided by f times the previous iteration's Q (so that it
 * measures the relative error of the quotient, the Sanathanan-Koerner
 * iteration), and each point's weight multiplied by its error after the
 * first iterations (Lawson's iteration towards the minimax fit).  Prints the
 * coefficients in powers of x^2, rounded to f32 as the generator holds them
 * (generator/planner/classic.lua), and the largest relative error of the
 * rounded fit evaluated in f32 with FMAs, as the kernels evaluate it.
 *
 *   cc -O2 scripts/fit_tanh.c -o fit_tanh -lm && ./fit_tanh
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { NP = 6, NQ = 3, N = NP + NQ, POINTS = 4000, ITERATIONS = 60, LAWSON_FROM = 10 };
#define XMAX 9.0L /* tanh(x) rounds to 1 in f32 from about 9.01 on */

typedef long double real;

static real xs[POINTS], fs[POINTS], weight[POINTS], qprev[POINTS];

/* Solves the N x N system a (augmented with its right-hand side) in place. */
static void solve(real a[N][N + 1])
{
    int c, r, k;
    for (c = 0; c < N; c++) {
        int piv = c;
        for (r = c + 1; r < N; r++)
            if (fabsl(a[r][c]) > fabsl(a[piv][c])) piv = r;
        for (k = 0; k <= N; k++) {
            const real t = a[c][k];
            a[c][k] = a[piv][k];
            a[piv][k] = t;
        }
        for (r = 0; r < N; r++)
            if (r != c) {
                const real f = a[r][c] / a[c][c];
                for (k = c; k <= N; k++) a[r][k] -= f * a[c][k];
            }
    }
    for (c = 0; c < N; c++) a[c][N] /= a[c][c];
}

/* P and Q of the scaled variable t = x^2 / XMAX^2 at point k. */
static void eval(const real *coef, int k, real *p, real *q)
{
    const real t = xs[k] * xs[k] / (XMAX * XMAX);
    int i;
    *p = 0;
    for (i = NP - 1; i >= 0; i--) *p = *p * t + coef[i];
    *q = 0;
    for (i = NQ - 1; i >= 0; i--) *q = *q * t + coef[NP + i];
    *q = *q * t + 1;
}

int main(void)
{
    real coef[N], scale;
    float pf[NP], qf[NQ + 1];
    double worst = 0, at = 0;
    int it, k, i, j;

    for (k = 0; k < POINTS; k++) {
        const real u = (k + 0.5L) / POINTS;
        xs[k] = XMAX * (1 - cosl(u * 3.14159265358979323846L)) / 2 + 1e-6L;
        fs[k] = tanhl(xs[k]);
        weight[k] = 1;
        qprev[k] = 1;
    }
    for (it = 0; it < ITERATIONS; it++) {
        real a[N][N + 1], total = 0;
        memset(a, 0, sizeof a);
        for (k = 0; k < POINTS; k++) { /* the normal equations of x P - f (Q - 1) = f */
            const real t = xs[k] * xs[k] / (XMAX * XMAX), s = sqrtl(weight[k]) / (fs[k] * qprev[k]);
            real row[N + 1], tp = 1;
            for (i = 0; i < NP; i++, tp *= t) row[i] = xs[k] * tp * s;
            for (i = 0, tp = t; i < NQ; i++, tp *= t) row[NP + i] = -fs[k] * tp * s;
            row[N] = fs[k] * s;
            for (i = 0; i < N; i++)
                for (j = 0; j <= N; j++) a[i][j] += row[i] * row[j];
        }
        solve(a);
        for (i = 0; i < N; i++) coef[i] = a[i][N];
        for (k = 0; k < POINTS; k++) {
            real p, q;
            eval(coef, k, &p, &q);
            qprev[k] = q;
            if (it >= LAWSON_FROM) weight[k] *= fabsl(xs[k] * p / q - fs[k]) / fs[k];
            total += weight[k];
        }
        for (k = 0; k < POINTS; k++) weight[k] *= POINTS / total;
    }
    /* back to powers of x^2, rounded to f32 */
    for (i = 0, scale = 1; i < NP; i++, scale *= XMAX * XMAX) pf[i] = (float)(coef[i] / scale);
    qf[0] = 1.0f;
    for (i = 0, scale = XMAX * XMAX; i < NQ; i++, scale *= XMAX * XMAX) qf[i + 1] = (float)(coef[NP + i] / scale);
    for (i = 0; i < NP; i++) printf("P[%d] = %.9e\n", i, pf[i]);
    for (i = 0; i <= NQ; i++) printf("Q[%d] = %.9e\n", i, qf[i]);
    for (k = 1; k <= 9500000; k++) { /* the f32 evaluation, x in (0, 9.5] */
        const float x = (float)(k * 1e-6), xc = x < (float)XMAX ? x : (float)XMAX, t = xc * xc;
        float p = pf[NP - 1], q = qf[NQ], y;
        double ref, err;
        for (i = NP - 2; i >= 0; i--) p = fmaf(p, t, pf[i]);
        for (i = NQ - 1; i >= 0; i--) q = fmaf(q, t, qf[i]);
        y = xc * p / q;
        ref = tanh((double)x);
        err = fabs(y - ref) / ref;
        if (err > worst) worst = err, at = x;
    }
    printf("largest relative error in f32: %.3g at x = %.6g\n", worst, at);
    return 0;
}
