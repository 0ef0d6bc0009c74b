# Sourced by benchmark scripts (test/scale.sh): a scratch file system whose speed of creating files
# does not depend on what the last step deleted.
#
# Why: this project's VMs run on ext4 without a journal. There the inode allocator skips free inodes
# deleted within the last minute, or six minutes when their inode table block is dirty
# (fs/ext4/ialloc.c, recently_deleted), and it checks each candidate with a buffer cache lookup.
# After a step deletes tens of thousands of files, the next step's creates walk those inodes one by
# one, and its own creates dirty the same blocks, which keeps the window at six minutes. Measured:
# 30,000 empty files created in 1.7 s on a settled disk, 6.6 s right after deleting them, then
# 11.7, 15.4 and 18.7 s in rounds each 65 s after deleting the last, and 29.6 s right after a
# delete; a perf profile of that round is 80 % recently_deleted and its lookups, and of a
# 10,000-file clone right after another's delete 31 % of the clone's CPU. Which way of an A/B ran
# after the bigger delete decided its ratio: the same 10,000-file clone took 10.6 to 31.4 s.
#
# What: with SCRATCH_FS=image (the default when root may set up a loop device), an ext4 image with
# a journal (mkfs.ext4's default, and what most users' disks have; the allocator's check applies
# only without one) in a sparse file on the same disk, through a loop device with direct I/O (no
# second page cache), mounted at DIR/fs. Deleting there costs the next step nothing: the same
# clone, alternating with plain git-lfs's and deleted after each, took 11.8-13.1 s three times (an
# image through a buffered loop device; with direct I/O the 50,000-file runs agreed within 2-22 %).
# scratch_fs_trim (after a step's delete, outside any measurement) returns the freed blocks to the
# disk, so the image holds what its steps hold, not every block they ever wrote. SCRATCH_FS=dir, or
# no root or loop device: DIR itself, as before (then the figures carry the noise above).
#
#   scratch_fs_mount DIR     sets SCRATCH_DIR (where steps run) and SCRATCH_NOTE (what it is)
#   scratch_fs_trim          frees the image's deleted blocks on the disk (no-op for a directory)
#   scratch_fs_unmount [keep] unmounts and detaches, deleting the image unless keep (safe to call
#                            twice; call it from the EXIT trap)

SCRATCH_DIR="" SCRATCH_NOTE="" scratch_loop="" scratch_mnt=""

scratch_fs_mount() {
  local dir=$1 img avail size
  SCRATCH_DIR=$dir SCRATCH_NOTE="the scratch directory ($(findmnt -n -o FSTYPE -T "$dir" 2>/dev/null || echo '?'))"
  case ${SCRATCH_FS:-image} in
  dir) return 0 ;;
  image) ;;
  *) echo "scratchfs: SCRATCH_FS is image or dir, not $SCRATCH_FS" >&2; return 2 ;;
  esac
  if [ "$(id -u)" != 0 ] || ! command -v mkfs.ext4 >/dev/null || ! command -v losetup >/dev/null; then
    SCRATCH_NOTE="$SCRATCH_NOTE: an ext4 image needs root, mkfs.ext4 and losetup"
    return 0
  fi
  img=$dir/fs.img scratch_mnt=$dir/fs
  # Sparse: the disk holds only what the steps hold (scratch_fs_trim); sized to the free space less
  # 1 GiB so that a step that would fill the disk fails inside the image, not outside it.
  avail=$(df -B1 --output=avail "$dir" | tail -n1 | tr -d ' ')
  size=$((avail - (1 << 30)))
  if [ "$size" -lt $((1 << 30)) ]; then
    SCRATCH_NOTE="$SCRATCH_NOTE: under 2 GiB free for an ext4 image"
    return 0
  fi
  truncate -s "$size" "$img"
  if ! mkfs.ext4 -q -F -m 0 -E nodiscard "$img" >/dev/null 2>&1; then
    rm -f "$img"; SCRATCH_NOTE="$SCRATCH_NOTE: mkfs.ext4 failed"; return 0
  fi
  scratch_loop=$(losetup --direct-io=on --find --show "$img" 2>/dev/null || losetup --find --show "$img" 2>/dev/null) || scratch_loop=""
  mkdir -p "$scratch_mnt"
  # noinit_itable: no background zeroing of inode tables competing with the measured steps.
  if [ -z "$scratch_loop" ] || ! mount -o noinit_itable "$scratch_loop" "$scratch_mnt" 2>/dev/null; then
    [ -n "$scratch_loop" ] && losetup -d "$scratch_loop" 2>/dev/null
    scratch_loop="" scratch_mnt=""
    rm -f "$img"; SCRATCH_NOTE="$SCRATCH_NOTE: no loop device could be set up"
    return 0
  fi
  SCRATCH_DIR=$scratch_mnt
  SCRATCH_NOTE="an ext4 image with a journal on the same disk ($scratch_loop$(cat "/sys/block/${scratch_loop#/dev/}/loop/dio" 2>/dev/null | sed 's/^1$/, direct I\/O/;s/^0$//'))"
}

scratch_fs_trim() {
  [ -n "$scratch_mnt" ] || return 0
  fstrim "$scratch_mnt" 2>/dev/null || true
}

scratch_fs_unmount() {
  [ -n "$scratch_mnt" ] || return 0
  umount "$scratch_mnt" 2>/dev/null || umount -l "$scratch_mnt" 2>/dev/null || true
  [ -n "$scratch_loop" ] && losetup -d "$scratch_loop" 2>/dev/null
  [ "${1:-}" = keep ] || rm -f "${scratch_mnt%/fs}/fs.img"
  rmdir "$scratch_mnt" 2>/dev/null || true
  scratch_loop="" scratch_mnt=""
}
