# The devices of the guests' QEMU (scripts/guest-qemu.sh builds it with
# --without-default-devices): the PCs of i440FX and Q35, their serial
# ports, virtio-serial and virtio-9p for the demo's guests, isa-debugcon
# for the firmware-only guests of tests/l1 and bench/; nothing else.
CONFIG_I440FX=y
CONFIG_Q35=y
CONFIG_SERIAL_ISA=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_SERIAL=y
CONFIG_VIRTIO_9P=y
CONFIG_ISA_DEBUG=y
# 10.2's ACPI tables call into CXL, whose stubs lack a function when CXL
# is off (--without-default-devices drops its "default y"); CXL needs the
# PCI expander bridge, and links only with its type 3 device, and its
# root port registers only with PCIe's.
CONFIG_PXB=y
CONFIG_CXL=y
CONFIG_CXL_MEM_DEVICE=y
CONFIG_PCIE_PORT=y
