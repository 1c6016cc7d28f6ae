# The front door.  Every target installs what it needs.
#
#   make demo     profile a Linux guest from the host: flame graph and files
#                 in build/demo-out (DEMO_OUT=dir, DEMO_SECONDS=20;
#                 DEMO_GUESTS=3: three VMs at once, the flame graph by VM)
#   make check    every test (scripts/all-tests.sh): deps, tree, checkpatch,
#                 builds, harness tests, the L1 suite, bench smoke, short demo;
#                 judged against tests/expected (every result, and the skips
#                 it allows with their reasons); CHECK_SECONDS=5100 its time
#   make check-host  on a host booted into the series' kernel (make
#                 packages' kernel), as root: the KVM selftests, the perf
#                 tests that need the series' kernel and a real guest
#                 recorded under the host's KVM, judged against
#                 tests/expected with this host's conditions (no PMU, no
#                 SVM...); make packages' perf and selftests where they are
#                 installed, else make build's (scripts/check-host.sh;
#                 CHECK_HOST_PERF=all: all of perf's tests too).  make check
#                 runs it inside L1
#   make expected rewrite tests/expected from the last make check's results
#                 (build/out/check/results.txt): read the diff before committing
#   make build    the patched kernel, perf and the KVM selftests
#   make verified-builds  copy make check's record of what built
#                 (build/verified-builds) into tests/verified-builds, to
#                 commit with the change that made it: CI then builds only
#                 what it does not record
#   make tree     materialise build/linux: base + patches/ with git am
#   make export   write the commits of build/linux back into patches/
#   make bench    in-kernel vs userspace guest call-chain sampling, side by
#                 side inside L1, then the ratios, the host part's cost among them
#                 (about 33 min, the last 6 bench-agentless's): build/bench-out/results.md, overhead.png
#   make bench-memslots   what an opted-in VM's memslot updates cost: QEMU's
#                 SeaBIOS booted in L1 opted in and not, side by side (boot
#                 time, IPIs, memslot ioctl time; L1_KERNEL=bzImage: another
#                 kernel to compare; about 5 min)
#   make bench-agentless   what profiling a guest from the host alone costs:
#                 the bare guest's own speed with perf kvm tasks -o reading
#                 it every 100 ms against none, alternating, and the host's
#                 CPU per read (about 6 min; also make bench's last part):
#                 build/bench-out/agentless/results.md
#   make bench-perf   what the perf series cost host-only profiles: one
#                 recording read by the base's perf and by ours built the
#                 same way, side by side (perf report, perf script: CPU
#                 time, and instructions where valgrind is; about 12 min):
#                 build/bench-out/perf-tools/results.md
#   make bisect   every patch builds on its own, perf at each also without
#                 libelf and without libdw (BISECT_VARIANTS=changed: where
#                 the libraries can change what builds; about 25 min with an
#                 empty ccache); make check builds only the patches that
#                 tests/verified-builds does not record built, and perf's
#                 other builds at the last
#   make bochs    every guest call chain selftest sub-test on Intel VMX, our
#                 kernel under Bochs (about 5 min; make check runs a part)
#   make check-vms  several VMs at once, make demo's whole path: two stock
#                 guests in one L1 (DEMO_GUESTS=2), recorded together, told
#                 apart, then given the wrong sidebands (about 17 minutes;
#                 make check leaves it out for time)
#   make demo-soak RUNS=10 HOG=0 GUESTS=1   the short demo RUNS times in a
#                 row, checked, with the figures demo/thresholds.conf's bounds
#                 come from (HOG=N: stress-ng --cpu N beside; GUESTS=2: the
#                 two-VM demo)
#   make packages a kernel package (bindeb-pkg, KVM as modules), a perf
#                 package and a QEMU package (patches/qemu) for a
#                 Debian/Ubuntu host, in build/packages, from
#                 the host's or Debian's config (hours on 2 cores;
#                 PKG_LOCALMODCONFIG=1: the host's loaded modules only;
#                 PKG_SMALL=1: the small configuration make check builds;
#                 LINUX_SRC=tree-or-tarball: the base from a 7.3 kernel tree
#                 or tarball, where Debian's package can't be fetched).
#                 Installs only what building them needs (deps.sh packages)
#   make l1 RUN='command'   run a command inside L1, with the log check
#   make l1-kvm-down  the KVM-accelerated L1 path one level down, by itself:
#                 l1-run.sh inside L1 boots our kernel under KVM
#                 (tests/l1/kvm-down.sh; make check checks only the choice:
#                 that boot took over 400 s on the bench's nested emulation)
#   make clean    remove build/ (keeps the ccache)

S := scripts

.PHONY: all check check-host check-vms expected verified-builds build deps tree export kernel perf selftests bench bench-perf bench-memslots bench-agentless demo demo-deps demo-soak bochs bisect packages l1 l1-kvm-down clean distclean

all: build

check:
	@bash $(S)/all-tests.sh

verified-builds:
	@test -s build/verified-builds || { echo "no build/verified-builds: run make check first"; exit 1; }
	@cp build/verified-builds tests/verified-builds && git diff --stat tests/verified-builds

check-host:
	@bash $(S)/check-host.sh

expected:
	@python3 $(S)/results.py accept --nested l1/check-host/ build/out/check/results.txt tests/expected

deps:
	@bash $(S)/deps.sh

tree: deps
	@bash $(S)/tree.sh

export:
	@bash $(S)/export.sh

kernel: tree
	@bash -c '. $(S)/lib.sh; stage build-kernel bash $(S)/build-kernel.sh'

perf: tree
	@bash -c '. $(S)/lib.sh; stage build-perf bash $(S)/build-perf.sh'

selftests: kernel
	@bash -c '. $(S)/lib.sh; stage build-selftests bash $(S)/build-selftests.sh'

build: kernel perf selftests

bench: build
	@bash -c '. $(S)/lib.sh; stage bench bash bench/run.sh'

bench-perf: perf
	@bash -c '. $(S)/lib.sh; stage bench-perf bash bench/perf-tools.sh'

bench-memslots: build
	@bash -c '. $(S)/lib.sh; stage bench-memslots bash bench/memslot-boot.sh'

bench-agentless: build demo-deps
	@bash -c '. $(S)/lib.sh; stage bench-agentless bash bench/agentless.sh'

demo-deps: deps
	@bash demo/deps.sh

demo: demo-deps kernel perf
	@bash demo/run.sh $(DEMO_OUT)

bisect: kernel
	@bash -c '. $(S)/lib.sh; export BISECT_VARIANTS=$(or $(BISECT_VARIANTS),all); stage bisect bash $(S)/bisect-build.sh'

bochs: build
	@bash -c '. $(S)/lib.sh; stage bochs bash tests/bochs/vmx-test.sh --all'

check-vms: demo-deps kernel perf selftests
	@bash tests/demo/vms-check.sh

demo-soak: demo-deps kernel perf
	@bash demo/soak.sh $(RUNS) $(HOG) $(GUESTS)

packages:
	@bash $(S)/deps.sh packages
	@bash $(S)/tree.sh
	@bash -c '. $(S)/lib.sh; stage packages bash $(S)/packages.sh'

l1:
	@test -n "$(RUN)" || { echo "usage: make l1 RUN='command'"; exit 2; }
	@bash $(S)/l1-run.sh sh -c '$(RUN)'

l1-kvm-down: build
	@bash tests/l1/kvm-one-down.sh

clean:
	rm -rf build/kbuild build/perf build/selftests build/out build/bzImage

distclean:
	rm -rf build
