;; The AFL map's inner loop in WebAssembly: coverage-map-loop.ts's mapLoop, the same
;; steps in the same order, over a decision graph whose node words and hash slots live
;; in this module's memory (map-loop-engine.ts puts them there). It takes TNT-8, TIP,
;; CYC, MTC and PAD packets straight from the bytes and stops at anything else, where
;; the packet loop in JavaScript goes on (and at a two-byte CYC ending in 0x02, which
;; with SKD007 may be the first two bytes of an OVF: the packet decoder knows). Where
;; it needs a node the graph has not made yet it returns before the step that needs it
;; (fail 6-8, p the node, bit the TNT bit, hops the direct transfers run so far),
;; JavaScript makes the node, and the loop is called again at the same packet to go on
;; from that step.
;;
;; Node words (DecisionGraph's Node, 8 words a node): 0 Kind, 1 Insns, 2 Taken, 3 Fall,
;; 4 Lo, 5 Hi, 6 TipId, 7 Walk (kind | AFL location << 3 | min(insns, 0xfff) << 19).
;; Kinds: 1 CondJump, 2 Jump, 3 Call, 4 IndirectJump, 5 IndirectCall, 6 Return, 7 Far.
;;
;; Assembled into map-loop-wasm.ts by tools/build/map-loop-wasm.ts (a test checks that
;; the bytes there are this file's).
(module
  (import "env" "memory" (memory 1))
  ;; Where things are in the memory (byte addresses), set once by the engine.
  (global $packet (mut i32) (i32.const 0))   ;; 256 bytes: each opcode byte's class (Pkt)
  (global $ipcBytes (mut i32) (i32.const 0)) ;; 8 bytes: a TIP's payload size by IPBytes
  (global $calls (mut i32) (i32.const 0))    ;; 64 words: the ring of nodes after calls
  (global $stackLo (mut i32) (i32.const 0))  ;; 65 words each: the RET compression stack
  (global $stackHi (mut i32) (i32.const 0))
  (global $map (mut i32) (i32.const 0))      ;; 65536 bytes: the AFL map
  (global $nodes (mut i32) (i32.const 0))
  (global $slots (mut i32) (i32.const 0))
  (global $mask (mut i32) (i32.const 0))     ;; hash slots - 1 (the run's `slotMask`)
  ;; 64 bytes: the state where the loop stopped, as words (byte offsets): 0 p, 4 prev,
  ;; 8 ipHi, 12 ipLo, 16 depth, 20 due, 24 src, 28 moved, 32 tips, 36 fail, 40 bit,
  ;; 44 hops, 48 top, 52 bottom; 56 the instruction count (f64). (Read through a typed
  ;; array: an exported global's value costs JavaScript a call to read.)
  (global $state (mut i32) (i32.const 0))
  (export "packet" (global $packet))
  (export "ipcBytes" (global $ipcBytes))
  (export "calls" (global $calls))
  (export "stackLo" (global $stackLo))
  (export "stackHi" (global $stackHi))
  (export "map" (global $map))
  (export "nodes" (global $nodes))
  (export "slots" (global $slots))
  (export "state" (global $state))

  ;; The packets at [pos, end) (byte addresses in the memory), control at node p; returns
  ;; the address of the packet it stopped at, fail saying why (see $state for the rest):
  ;;   0 a packet it does not take (or the end), 5 a packet the end cuts short,
  ;;   1 too many direct transfers in a row (Handover.Loop), 3 code that does not fit
  ;;   the packet (Handover.Code), 6/7/8 node p's taken / fall-through successor /
  ;;   TIP target is not made yet (call again with startBit `bit` and hops `hops`).
  ;; `mapped` 0: no map, the instruction count only.
  (func (export "run") (param $pos i32) (param $end i32) (param $p i32) (param $prev i32)
      (param $ipHi i32) (param $ipLo i32) (param $depth i32) (param $due i32) (param $insns f64)
      (param $src i32) (param $maxHops i32) (param $mapped i32) (param $startBit i32)
      (param $hops i32) (param $top i32) (param $bottom i32) (param $slotMask i32) (result i32)
    (local $b i32) (local $c i32) (local $bits i32) (local $size i32) (local $ipc i32) (local $n i32)
    (local $q i32) (local $x i32) (local $i i32) (local $at i32) (local $e i32) (local $k i32)
    (local $f i32) (local $t i32) (local $cur i32) (local $taken i32) (local $guess i32)
    (local $moved i32) (local $tips i32) (local $fail i32) (local $v i32)
    (local $ip i64) (local $m i64) (local $sx i64) (local $h i32) (local $s i32)
    (global.set $mask (local.get $slotMask))
    (local.set $ip (i64.or (i64.shl (i64.extend_i32_u (local.get $ipHi)) (i64.const 32))
                           (i64.extend_i32_u (local.get $ipLo))))
    (block $out
      (loop $packets
        (br_if $out (i32.ge_u (local.get $pos) (local.get $end)))
        (local.set $b (i32.load8_u (local.get $pos)))
        (local.set $c (i32.load8_u (i32.add (global.get $packet) (local.get $b))))
        (local.set $bits (i32.const 0))
        (local.set $size (i32.const 1))
        (if (i32.eq (local.get $c) (i32.const 2))
          (then
            ;; TNT-8: bits 7:1 hold the branches behind a stop bit.
            (local.set $bits (i32.sub (i32.const 30) (i32.clz (local.get $b)))))
          (else
            (if (i32.ge_u (local.get $c) (i32.const 8))
              (then
                ;; TIP: the last IP updated as LastIp.update does.
                (local.set $ipc (i32.sub (local.get $c) (i32.const 8)))
                (local.set $n (i32.load8_u (i32.add (global.get $ipcBytes) (local.get $ipc))))
                (if (i32.gt_u (i32.add (i32.add (local.get $pos) (i32.const 1)) (local.get $n)) (local.get $end))
                  (then (local.set $fail (i32.const 5)) (br $out)))
                ;; The payload's n bytes replace the IP's low 8n bits (one load of 8 bytes, masked:
                ;; the payload sizes of a trace's TIPs are a coin toss to the branch predictor);
                ;; IPBytes 011 then sign-extends from bit 47.
                (local.set $m (i64.shr_u (i64.const -1) (i64.extend_i32_u (i32.sub (i32.const 64) (i32.shl (local.get $n) (i32.const 3))))))
                (local.set $ip (i64.or (i64.and (local.get $ip) (i64.xor (local.get $m) (i64.const -1)))
                                       (i64.and (i64.load offset=1 (local.get $pos)) (local.get $m))))
                (local.set $sx (select (i64.const 16) (i64.const 0) (i32.eq (local.get $ipc) (i32.const 3))))
                (local.set $ip (i64.shr_s (i64.shl (local.get $ip) (local.get $sx)) (local.get $sx)))
                (local.set $tips (i32.const 1))
                (local.set $size (i32.add (i32.const 1) (local.get $n))))
              (else
                (if (i32.eq (local.get $c) (i32.const 3))
                  (then
                    ;; CYC: skipped; at most 8 extension bytes, as the packet decoder takes.
                    (local.set $q (i32.add (local.get $pos) (i32.const 1)))
                    (if (i32.and (local.get $b) (i32.const 4))
                      (then
                        (loop $ext
                          (if (i32.ge_u (local.get $q) (local.get $end))
                            (then (local.set $fail (i32.const 5)) (br $out)))
                          (br_if $out (i32.gt_u (i32.sub (local.get $q) (local.get $pos)) (i32.const 8)))
                          (local.set $x (i32.load8_u (local.get $q)))
                          (local.set $q (i32.add (local.get $q) (i32.const 1)))
                          ;; SKD007's CYC (02 F3 may be an OVF): left to the packet decoder.
                          (br_if $out (i32.and (i32.eq (local.get $x) (i32.const 2))
                                               (i32.eq (local.get $q) (i32.add (local.get $pos) (i32.const 2)))))
                          (br_if $ext (i32.and (local.get $x) (i32.const 1))))))
                    (local.set $pos (local.get $q))
                    (br $packets)))
                (if (i32.eq (local.get $c) (i32.const 4))
                  (then
                    ;; MTC: skipped.
                    (if (i32.gt_u (i32.add (local.get $pos) (i32.const 2)) (local.get $end))
                      (then (local.set $fail (i32.const 5)) (br $out)))
                    (local.set $pos (i32.add (local.get $pos) (i32.const 2)))
                    (br $packets)))
                (if (i32.eq (local.get $c) (i32.const 1))
                  (then
                    ;; PAD.
                    (local.set $pos (i32.add (local.get $pos) (i32.const 1)))
                    (br $packets)))
                (br $out)))))
        ;; The packet's decisions: bits - 1 down to 0 (or from startBit, going on), or a TIP's one.
        (local.set $i (select (i32.sub (local.get $bits) (i32.const 1)) (i32.const 0) (i32.gt_s (local.get $bits) (i32.const 0))))
        (if (i32.ge_s (local.get $startBit) (i32.const 0))
          (then (local.set $i (local.get $startBit)) (local.set $startBit (i32.const -1))))
        (loop $decisions
          (local.set $at (i32.add (global.get $nodes) (i32.shl (local.get $p) (i32.const 5))))
          ;; Straight-line code and direct transfers up to the next decision (GraphWalk.toDecision).
          (block $decided
            (loop $straight
              (local.set $e (i32.load offset=28 (local.get $at)))
              (if (i32.lt_s (local.get $e) (i32.const 0))
                (then
                  (local.set $n (i32.load offset=4 (local.get $at)))
                  (local.set $x (i32.load offset=16 (local.get $at)))
                  (local.set $e (i32.or (i32.or (i32.load (local.get $at))
                      (i32.shl (i32.and (i32.xor (i32.shr_u (local.get $x) (i32.const 4)) (i32.shl (local.get $x) (i32.const 8))) (i32.const 0xffff)) (i32.const 3)))
                      (i32.shl (select (local.get $n) (i32.const 0xfff) (i32.lt_u (local.get $n) (i32.const 0xfff))) (i32.const 19))))
                  (i32.store offset=28 (local.get $at) (local.get $e))))
              (if (local.get $due)
                (then
                  ;; The block's first instruction runs: one byte of the map, saturating.
                  (if (local.get $mapped)
                    (then
                      (local.set $cur (i32.and (i32.shr_u (local.get $e) (i32.const 3)) (i32.const 0xffff)))
                      (if (i32.eq (local.get $due) (i32.const 1)) (then (local.set $prev (i32.const 0))))
                      (local.set $x (i32.add (global.get $map) (i32.xor (local.get $cur) (local.get $prev))))
                      (local.set $v (i32.add (i32.load8_u (local.get $x)) (i32.const 1)))
                      (i32.store8 (local.get $x) (i32.sub (local.get $v) (i32.shr_u (local.get $v) (i32.const 8))))
                      (local.set $prev (i32.shr_u (local.get $cur) (i32.const 1)))))
                  (local.set $due (i32.const 0))))
              (local.set $k (i32.and (local.get $e) (i32.const 7)))
              (br_if $decided (i32.and (i32.ne (local.get $k) (i32.const 2)) (i32.ne (local.get $k) (i32.const 3))))
              (if (i32.eq (local.get $hops) (local.get $maxHops))
                (then (local.set $fail (i32.const 1)) (br $out)))
              (local.set $f (i32.const -2))
              (if (i32.eq (local.get $k) (i32.const 3))
                (then
                  (local.set $f (i32.load offset=12 (local.get $at)))
                  (if (i32.eq (local.get $f) (i32.const -1))
                    (then (local.set $fail (i32.const 7)) (br $out)))))
              (local.set $t (i32.load offset=8 (local.get $at)))
              (if (i32.eq (local.get $t) (i32.const -1))
                (then (local.set $fail (i32.const 6)) (br $out)))
              (if (i32.ge_s (local.get $f) (i32.const 0))
                (then
                  ;; A call: its return address on the stack (a node id, as GraphWalk keeps it) and in the ring.
                  (i32.store (i32.add (global.get $stackLo) (i32.shl (local.get $top) (i32.const 2))) (local.get $f))
                  (i32.store (i32.add (global.get $stackHi) (i32.shl (local.get $top) (i32.const 2))) (i32.const 0))
                  (local.set $top (select (i32.const 0) (i32.add (local.get $top) (i32.const 1)) (i32.eq (local.get $top) (i32.const 64))))
                  (if (i32.eq (local.get $top) (local.get $bottom))
                    (then (local.set $bottom (select (i32.const 0) (i32.add (local.get $bottom) (i32.const 1)) (i32.eq (local.get $bottom) (i32.const 64))))))
                  (local.set $depth (i32.and (i32.add (local.get $depth) (i32.const 1)) (i32.const 63)))
                  (i32.store (i32.add (global.get $calls) (i32.shl (local.get $depth) (i32.const 2))) (local.get $f))))
              (local.set $n (i32.shr_u (local.get $e) (i32.const 19)))
              (if (i32.eq (local.get $n) (i32.const 0xfff)) (then (local.set $n (i32.load offset=4 (local.get $at)))))
              (local.set $insns (f64.add (local.get $insns) (f64.convert_i32_u (local.get $n))))
              (local.set $hops (i32.add (local.get $hops) (i32.const 1)))
              (local.set $due (i32.const 2))
              (local.set $src (local.get $p))
              (local.set $moved (i32.const 1))
              (local.set $p (local.get $t))
              (local.set $at (i32.add (global.get $nodes) (i32.shl (local.get $p) (i32.const 5))))
              (br $straight)))
          (if (i32.gt_s (local.get $bits) (i32.const 0))
            (then
              (local.set $taken (i32.and (i32.shr_u (local.get $b) (i32.add (local.get $i) (i32.const 1))) (i32.const 1)))
              (if (i32.eq (local.get $k) (i32.const 1))
                (then
                  ;; A conditional jump: Taken (word 2) or Fall (word 3).
                  (local.set $t (i32.load offset=12 (i32.sub (local.get $at) (i32.shl (local.get $taken) (i32.const 2)))))
                  (if (i32.eq (local.get $t) (i32.const -1))
                    (then (local.set $fail (i32.sub (i32.const 7) (local.get $taken))) (br $out))))
                (else
                  ;; A compressed return pops its call's return address.
                  (if (i32.and (i32.and (i32.eq (local.get $k) (i32.const 6)) (local.get $taken))
                               (i32.ne (local.get $top) (local.get $bottom)))
                    (then
                      (local.set $top (select (i32.const 64) (i32.sub (local.get $top) (i32.const 1)) (i32.eqz (local.get $top))))
                      (local.set $t (i32.load (i32.add (global.get $stackLo) (i32.shl (local.get $top) (i32.const 2)))))
                      (local.set $depth (i32.and (i32.sub (local.get $depth) (i32.const 1)) (i32.const 63))))
                    (else (local.set $fail (i32.const 3)) (br $out))))))
            (else
              ;; A TIP: an indirect call pushes its return address, a return likely goes
              ;; where the latest call not returned to would (the ring; only a guess).
              (local.set $guess (i32.const -1))
              (local.set $f (i32.const -1))
              (if (i32.eq (local.get $k) (i32.const 5))
                (then
                  (local.set $f (i32.load offset=12 (local.get $at)))
                  (if (i32.eq (local.get $f) (i32.const -1))
                    (then (local.set $fail (i32.const 7)) (br $out))))
                (else
                  (if (i32.eq (local.get $k) (i32.const 6))
                    (then (local.set $guess (i32.load (i32.add (global.get $calls) (i32.shl (local.get $depth) (i32.const 2))))))
                    (else
                      (if (i32.and (i32.ne (local.get $k) (i32.const 4)) (i32.ne (local.get $k) (i32.const 7)))
                        (then (local.set $fail (i32.const 3)) (br $out)))))))
              (local.set $t (local.get $guess))
              (block $found
                (if (i32.ge_s (local.get $t) (i32.const 0))
                  (then
                    (local.set $x (i32.add (global.get $nodes) (i32.shl (local.get $t) (i32.const 5))))
                    (br_if $found (i64.eq (i64.load offset=16 (local.get $x)) (local.get $ip)))))
                ;; Where the last TIP from here went (DecisionGraph.target), else the hash slots.
                (local.set $t (i32.load offset=24 (local.get $at)))
                (if (i32.ge_s (local.get $t) (i32.const 0))
                  (then
                    (local.set $x (i32.add (global.get $nodes) (i32.shl (local.get $t) (i32.const 5))))
                    (br_if $found (i64.eq (i64.load offset=16 (local.get $x)) (local.get $ip)))))
                ;; DecisionGraph.probe's look-up (its slot: the node id + 1 under the hash's
                ;; bits above SLOT_ID_BITS, 22); no node there yet: stop (fail 8).
                (local.set $x (i32.wrap_i64 (local.get $ip)))
                (local.set $h (i32.xor
                  (i32.mul (i32.xor (local.get $x) (i32.mul (i32.wrap_i64 (i64.shr_u (local.get $ip) (i64.const 32))) (i32.const 0x9e3779b1)))
                           (i32.const 0x85ebca6b))
                  (i32.shr_u (local.get $x) (i32.const 15))))
                (local.set $s (i32.and (local.get $h) (global.get $mask)))
                (local.set $h (i32.and (local.get $h) (i32.const 0xffc00000)))
                (block $probed
                  (loop $slot
                    (local.set $v (i32.load (i32.add (global.get $slots) (i32.shl (local.get $s) (i32.const 2)))))
                    (if (i32.eqz (local.get $v))
                      (then (local.set $fail (i32.const 8)) (br $out)))
                    (if (i32.eq (i32.and (local.get $v) (i32.const 0xffc00000)) (local.get $h))
                      (then
                        (local.set $t (i32.sub (i32.and (local.get $v) (i32.const 0x3fffff)) (i32.const 1)))
                        (br_if $probed (i64.eq (i64.load offset=16 (i32.add (global.get $nodes) (i32.shl (local.get $t) (i32.const 5))))
                                               (local.get $ip)))))
                    (local.set $s (i32.and (i32.add (local.get $s) (i32.const 1)) (global.get $mask)))
                    (br $slot)))
                (i32.store offset=24 (local.get $at) (local.get $t)))
              (if (i32.eq (local.get $k) (i32.const 5))
                (then
                  (i32.store (i32.add (global.get $stackLo) (i32.shl (local.get $top) (i32.const 2))) (local.get $f))
                  (i32.store (i32.add (global.get $stackHi) (i32.shl (local.get $top) (i32.const 2))) (i32.const 0))
                  (local.set $top (select (i32.const 0) (i32.add (local.get $top) (i32.const 1)) (i32.eq (local.get $top) (i32.const 64))))
                  (if (i32.eq (local.get $top) (local.get $bottom))
                    (then (local.set $bottom (select (i32.const 0) (i32.add (local.get $bottom) (i32.const 1)) (i32.eq (local.get $bottom) (i32.const 64))))))
                  (local.set $depth (i32.and (i32.add (local.get $depth) (i32.const 1)) (i32.const 63)))
                  (i32.store (i32.add (global.get $calls) (i32.shl (local.get $depth) (i32.const 2))) (local.get $f))))
              (if (i32.eq (local.get $k) (i32.const 6))
                (then (local.set $depth (i32.and (i32.sub (local.get $depth) (i32.const 1)) (i32.const 63)))))))
          (local.set $n (i32.shr_u (local.get $e) (i32.const 19)))
          (if (i32.eq (local.get $n) (i32.const 0xfff)) (then (local.set $n (i32.load offset=4 (local.get $at)))))
          (local.set $insns (f64.add (local.get $insns) (f64.convert_i32_u (local.get $n))))
          (local.set $hops (i32.const 0))
          (local.set $due (i32.const 2))
          (local.set $src (local.get $p))
          (local.set $moved (i32.const 1))
          (local.set $p (local.get $t))
          (local.set $i (i32.sub (local.get $i) (i32.const 1)))
          (br_if $decisions (i32.ge_s (local.get $i) (i32.const 0))))
        (local.set $pos (i32.add (local.get $pos) (local.get $size)))
        (br $packets)))
    (local.set $x (global.get $state))
    (i32.store offset=0 (local.get $x) (local.get $p))
    (i32.store offset=4 (local.get $x) (local.get $prev))
    (i32.store offset=8 (local.get $x) (i32.wrap_i64 (i64.shr_u (local.get $ip) (i64.const 32))))
    (i32.store offset=12 (local.get $x) (i32.wrap_i64 (local.get $ip)))
    (i32.store offset=16 (local.get $x) (local.get $depth))
    (i32.store offset=20 (local.get $x) (local.get $due))
    (i32.store offset=24 (local.get $x) (local.get $src))
    (i32.store offset=28 (local.get $x) (local.get $moved))
    (i32.store offset=32 (local.get $x) (local.get $tips))
    (i32.store offset=36 (local.get $x) (local.get $fail))
    (i32.store offset=40 (local.get $x) (local.get $i))
    (i32.store offset=44 (local.get $x) (local.get $hops))
    (i32.store offset=48 (local.get $x) (local.get $top))
    (i32.store offset=52 (local.get $x) (local.get $bottom))
    (f64.store offset=56 (local.get $x) (local.get $insns))
    (local.get $pos))
)
