//! memcached 1.6 automove (slab_automove=1); filled in below.
