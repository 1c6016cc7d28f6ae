# The devices of L1's QEMU (scripts/qemu.sh builds it with
# --without-default-devices): scripts/l1-run.sh's machine, the PC of
# i440FX, with its serial ports and the two virtio-9p shares; nothing else.
CONFIG_I440FX=y
CONFIG_SERIAL_ISA=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_9P=y
