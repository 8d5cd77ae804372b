"""A kernel from a tree: config fragments, the build, the initramfs, the QEMU boot, the console scan and the KTAP parse."""
