// sbatch's options (Slurm 22.05) and how sbatch reads them from the words
// of a script's #SBATCH lines, as getopt_long does:
//  - a long option may be given by any prefix that no other option shares
//    (`--out` is `--output`; `--nod` could be --nodefile, --nodelist or
//    --nodes, and is refused); an exact name always wins;
//  - a required argument follows `=` or is the next word (`--nodes=2`,
//    `--nodes 2`); an optional one only follows `=` (`--exclusive=user`;
//    `--exclusive user` leaves `user` a word of its own);
//  - short options take their argument attached or as the next word
//    (`-N2`, `-N 2`), and flags may be grouped (`-HO`);
//  - the first word that is not an option ends the options, and sbatch
//    refuses the script ("Invalid directive found in batch script").
// The option table is sbatch 22.05's own, recorded from the binary by
// test/slurm/record_sbatch_options.sh (test/slurm/sbatch_options.tsv);
// the short letters are its man page's.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace muster::cli {

enum class SbatchArgument { kNone, kRequired, kOptional };

struct SbatchOptionInfo {
  std::string_view name;  // long name, without "--"
  SbatchArgument argument;
  char short_name;  // 0: none
};

// The option the long name or prefix `word` (without "--") stands for,
// among sbatch's and, `with_pyxis`, the container plugin pyxis's
// (--container-image, --container-mounts). NotFound for no option;
// InvalidArgument, listing the candidates, for an ambiguous prefix.
StatusOr<const SbatchOptionInfo*> ResolveSbatchOption(std::string_view word, bool with_pyxis);

struct SbatchOption {
  std::string name;  // canonical long name
  std::optional<std::string> value;
  std::string given;  // as written (--out, -N)
};

// The options in `words`, in order (pyxis's included). Errors (InvalidArgument, with sbatch's
// reason): an unknown or ambiguous option, a missing or unwanted argument,
// a word that is not an option. With `rest` (sbatch's command line), the
// first word that is not an option (or the one after "--") ends the
// options instead: *rest is its index (words.size() when none).
StatusOr<std::vector<SbatchOption>> ReadSbatchOptions(const std::vector<std::string>& words, size_t* rest = nullptr);

// srun's options (srun 22.05's table, test/slurm/srun_options.tsv, and
// pyxis's), read the same way; srun's command line ends at its first word
// that is not an option, which begins the command (*rest).
StatusOr<std::vector<SbatchOption>> ReadSrunOptions(const std::vector<std::string>& words, size_t* rest);

}  // namespace muster::cli
