#!/bin/sh
# pipelined ring in schedgen's pipelinedring layout: N ranks, S segments of B bytes
N=$1 S=$2 B=$3
awk -v N=$N -v S=$S -v B=$B 'BEGIN{ printf "num_ranks %d\n", N;
 for (r=0;r<N;r++){ printf "\nrank %d {\n", r; l=0;
  for (i=0;i<S;i++){
   if (r>0){ l++; printf "l%d: recv %db from %d tag 0\n", l, B, r-1; rl=l }
   if (r<N-1){ l++; printf "l%d: send %db to %d tag 0\n", l, B, r+1; if (r>0) printf "l%d requires l%d\n", l, rl }
  }
  printf "}\n" } }'
