"""A kernel from a tree: config fragments, the build, the initramfs, the QEMU boot, the console scan and the KTAP parse.

Takes a commit and config fragments; gives a kernel, a boot log and test
results.
"""
