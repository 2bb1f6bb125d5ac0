// The name of the main program's module. dladdr names it by argv[0], whose memory
// process titles (setproctitle: redis, nginx, postgres) overwrite, so that frames would
// read "postgres: user db 127.0.0.1(52284) SELECT+0x5c78fc" and the same code in three
// processes would be three modules. /proc/self/exe names the executable itself.
// Thread-safety: every function may be called from any thread.
#pragma once

#include <dlfcn.h>

#include <string>

namespace liveheap::symbolize {

// The executable's path, read from /proc/self/exe once (an exec is a new image, with its
// own copy); "" where /proc cannot tell.
const std::string& main_program_path();

// The file of the object `address` is in, as dladdr's dli_fname but with the main program
// named by its path; "" when no object holds it. `info` receives dladdr's answer.
std::string object_file(const void* address, Dl_info& info);

// `name` as dladdr gave it for some address: the main program's path where it names the
// main program (its dli_fname, the current argv[0]), else `name` itself.
std::string main_program_named(const char* name);

}  // namespace liveheap::symbolize
