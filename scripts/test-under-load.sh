#!/usr/bin/env bash
# `npm test` on a clean clone of this checkout's committed HEAD (or $REPO), $RUNS times in a row (default 5),
# with two busy loops beside it; stops at the first failure. Log: /tmp/five-runs.log.
set -u
rm -rf /tmp/five && git clone -q "${REPO:-$(cd "$(dirname "$0")/.." && pwd)}" /tmp/five && cd /tmp/five
git log --oneline -1 > /tmp/five-runs.log
npm ci --no-audit --no-fund > /tmp/five-npm.log 2>&1
yes > /dev/null & Y1=$!
yes > /dev/null & Y2=$!
for i in $(seq 1 ${RUNS:-5}); do
  start=$(date +%s)
  env -u KAFKA_BROKERS -u DATABASE_URL CI=true npm test > /tmp/five-run-$i.log 2>&1
  rc=$?
  echo "run $i: exit $rc in $(( $(date +%s) - start )) s; $(grep -E 'Tests ' /tmp/five-run-$i.log | tail -1 | sed 's/\x1b\[[0-9;]*m//g')" >> /tmp/five-runs.log
  [ $rc -ne 0 ] && break
done
kill $Y1 $Y2
echo finished >> /tmp/five-runs.log
